// tests/examples/xml_reader.h — just enough of an XML reader to check the examples' SVG files:
// every tag closed in order, attribute values quoted, & only in the five entities, text and
// attributes unescaped. Malformed input throws std::runtime_error naming the byte offset.
#pragma once
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace tg::test {

struct XmlElement {
  std::string name;
  std::map<std::string, std::string> attrs;
  std::string text;  // the text directly inside, unescaped
  std::vector<std::unique_ptr<XmlElement>> children;

  std::string attr(const std::string& key) const {
    auto it = attrs.find(key);
    return it == attrs.end() ? "" : it->second;
  }
  // Every element below this one (depth first) with that name and, if given, that class.
  void find_all(const std::string& element, const std::string& css_class, std::vector<const XmlElement*>& out) const {
    for (const auto& c : children) {
      if (c->name == element && (css_class.empty() || c->attr("class") == css_class)) out.push_back(c.get());
      c->find_all(element, css_class, out);
    }
  }
  std::vector<const XmlElement*> all(const std::string& element, const std::string& css_class = "") const {
    std::vector<const XmlElement*> out;
    find_all(element, css_class, out);
    return out;
  }
};

class XmlReader {
 public:
  static std::unique_ptr<XmlElement> parse(const std::string& s) {
    XmlReader r(s);
    r.skip_prolog();
    auto root = r.element();
    r.skip_space();
    if (r.pos_ != s.size()) r.fail("text after the root element");
    return root;
  }

 private:
  explicit XmlReader(const std::string& s) : s_(s) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("XML: " + what + " at byte " + std::to_string(pos_));
  }
  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) pos_++;
  }
  void skip_prolog() {
    skip_space();
    if (s_.compare(pos_, 5, "<?xml") == 0) {
      size_t end = s_.find("?>", pos_);
      if (end == std::string::npos) fail("unterminated <?xml");
      pos_ = end + 2;
    }
    skip_space();
  }
  std::string name() {
    size_t start = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '-' ||
                                s_[pos_] == ':' || s_[pos_] == '_'))
      pos_++;
    if (start == pos_) fail("expected a name");
    return s_.substr(start, pos_ - start);
  }
  // Text up to `stop`, with the five entities replaced; a bare & or < is an error.
  std::string unescape_until(char stop) {
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != stop) {
      char c = s_[pos_];
      if (c == '<') fail("bare '<' in text");
      if (c == '&') {
        static const std::pair<const char*, char> entities[] = {
            {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
        bool known = false;
        for (auto [e, ch] : entities) {
          if (s_.compare(pos_, std::string(e).size(), e) == 0) {
            out += ch;
            pos_ += std::string(e).size();
            known = true;
            break;
          }
        }
        if (!known) fail("bare '&'");
        continue;
      }
      out += c;
      pos_++;
    }
    return out;
  }
  std::unique_ptr<XmlElement> element() {
    if (pos_ >= s_.size() || s_[pos_] != '<') fail("expected '<'");
    pos_++;
    auto e = std::make_unique<XmlElement>();
    e->name = name();
    for (;;) {
      skip_space();
      if (s_.compare(pos_, 2, "/>") == 0) {
        pos_ += 2;
        return e;
      }
      if (pos_ < s_.size() && s_[pos_] == '>') {
        pos_++;
        break;
      }
      std::string key = name();
      if (pos_ >= s_.size() || s_[pos_] != '=') fail("attribute '" + key + "' without a value");
      pos_++;
      if (pos_ >= s_.size() || s_[pos_] != '"') fail("attribute '" + key + "' value not quoted");
      pos_++;
      std::string value = unescape_until('"');
      if (pos_ >= s_.size()) fail("unterminated attribute value");
      pos_++;
      if (!e->attrs.emplace(key, value).second) fail("attribute '" + key + "' given twice");
    }
    for (;;) {
      e->text += unescape_until('<');
      if (pos_ >= s_.size()) fail("element <" + e->name + "> not closed");
      if (s_.compare(pos_, 2, "</") == 0) {
        pos_ += 2;
        std::string closing = name();
        if (closing != e->name) fail("</" + closing + "> closes <" + e->name + ">");
        skip_space();
        if (pos_ >= s_.size() || s_[pos_] != '>') fail("expected '>'");
        pos_++;
        return e;
      }
      e->children.push_back(element());
    }
  }

  const std::string& s_;
  size_t pos_ = 0;
};

}  // namespace tg::test
