// tests/docs/test_layers.cpp — the floors' check (cmake/check_layers.cmake against
// cmake/layers.txt): the tree passes it, and a back-edge put in on purpose fails it with a line
// naming the file, the header and the two rooms, as does an allowed back-edge the code no longer
// has, a file in no room, and a table that lists a room without a line, has a cycle, gives a room
// two lines or has a line of another form.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "test_util.h"

namespace tg::test {
namespace {

const std::string kRoot = std::string(TG_REFERENCE_DIR) + "/../..";
const std::string kScript = kRoot + "/cmake/check_layers.cmake";

ProgramRun check_layers(const std::string& root, const std::string& table) {
  return run_program(TG_CMAKE_COMMAND, {"-DTG_ROOT=" + root, "-DTG_LAYERS=" + table, "-P", kScript});
}

// A tree of two floors (nn below models) with one file each.
struct SmallTree {
  TempFolder dir;
  SmallTree() {
    std::filesystem::create_directories(dir.file("nn"));
    std::filesystem::create_directories(dir.file("models"));
    write_bytes(dir.file("nn/layer.h"), "#pragma once\n");
    write_bytes(dir.file("models/model.h"), "#pragma once\n#include \"nn/layer.h\"\n");
    write_bytes(dir.file("layers.txt"), "# the floors\nnn ->\nmodels -> nn  # above nn\n");
  }
  ProgramRun check() { return check_layers(dir.path, dir.file("layers.txt")); }
};

TEST(Layers, TheTreeIncludesOnlyDownTheTable) {
  const ProgramRun r = check_layers(kRoot, kRoot + "/cmake/layers.txt");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has_part(r.output, "each down the table")) << r.output;
}

TEST(Layers, ABackEdgeFailsNamingTheFileTheHeaderAndTheRooms) {
  SmallTree tree;
  EXPECT_EQ(tree.check().exit_code, 0) << tree.check().output;
  write_bytes(tree.dir.file("nn/layer.cpp"), "#include \"nn/layer.h\"\n  #  include \"models/model.h\"  // up\n");
  const ProgramRun r = tree.check();
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(has_part(r.output, "nn/layer.cpp includes models/model.h: nn is not above models")) << r.output;
  // allowed by name, it passes; the allowance outliving the include fails
  write_bytes(tree.dir.file("layers.txt"), "nn ->\nmodels -> nn\nallow nn/layer.cpp -> models/model.h\n");
  EXPECT_EQ(tree.check().exit_code, 0) << tree.check().output;
  std::filesystem::remove(tree.dir.file("nn/layer.cpp"));
  const ProgramRun stale = tree.check();
  EXPECT_NE(stale.exit_code, 0);
  EXPECT_TRUE(has_part(stale.output, "allow nn/layer.cpp -> models/model.h: the code no longer has it")) << stale.output;
}

TEST(Layers, AFileInNoRoomAndABadTableAreErrors) {
  {
    SmallTree tree;
    std::filesystem::create_directories(tree.dir.file("train"));
    write_bytes(tree.dir.file("train/loop.cpp"), "#include \"models/model.h\"\n");
    const ProgramRun r = tree.check();
    EXPECT_NE(r.exit_code, 0);
    EXPECT_TRUE(has_part(r.output, "train/loop.cpp: in no room")) << r.output;
  }
  const std::vector<std::pair<std::string, std::string>> tables = {
      {"nn ->\nmodels -> nn optim\n", "room models lists optim, which has no line of its own"},
      {"nn -> models\nmodels -> nn\n", "a cycle in the table"},
      {"nn ->\nmodels -> nn\nnn ->\n", "layers.txt:3: room nn has a line already"},
      {"nn ->\nmodels nn\n", "layers.txt:2: expected \"ROOM -> ROOMS BELOW\""},
  };
  for (const auto& [table, says] : tables) {
    SmallTree tree;
    write_bytes(tree.dir.file("layers.txt"), table);
    const ProgramRun r = tree.check();
    EXPECT_NE(r.exit_code, 0) << table;
    EXPECT_TRUE(has_part(r.output, says)) << r.output;
  }
}

}  // namespace
}  // namespace tg::test
