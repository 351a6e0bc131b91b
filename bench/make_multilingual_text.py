#!/usr/bin/python3
"""bench/make_multilingual_text.py — a multilingual text for timing GPT-2's tokenizer
(bench_bpe --gpt2, bench_gpt2_tokenizer.mjs): sentences drawn at random (seeded, so the same
text every time) from word lists in English, French, German, Russian, Arabic, Hindi, Chinese
and Japanese, with numbers, emoji, code-like lines and runs of spaces between paragraphs.

  /usr/bin/python3 bench/make_multilingual_text.py 4000000 > /tmp/multilingual.txt
"""
import random
import sys

WORDS = {
    "en": "the of and to in is was for that with as his on be at by had are from this which or have an they "
          "market river history language science winter morning garden engine question answer".split(),
    "fr": "le la les des une est dans pour que qui avec sur pas plus être été très après où déjà "
          "fenêtre forêt château élève hôpital garçon naïve crème".split(),
    "de": "der die das und ist nicht mit für auf dem sich des ein eine über schön größer Straße "
          "Mädchen Brücke Frühling Übersetzung Wörterbuch".split(),
    "ru": "и в не на что он с как это по но из его же вы мир время человек жизнь день рука "
          "работа слово место лицо друг глаз вопрос дом сторона".split(),
    "ar": "في من على إلى أن هذا التي الذي كان عن مع هذه كل بين العالم الكتاب المدرسة الشمس "
          "القمر البحر الطريق الوقت الحياة".split(),
    "hi": "और का की के में है यह को से पर एक भी नहीं था कि दुनिया भाषा समय जीवन पानी घर "
          "सूरज किताब रास्ता".split(),
    "zh": "我们 今天 天气 学习 机器 人工智能 北京 上海 中国 历史 语言 科学 时间 朋友 工作 "
          "问题 世界 城市 音乐 电影".split(),
    "ja": "東京 日本 ひらがな カタカナ 今日 天気 勉強 学校 先生 友達 電車 時間 世界 音楽 "
          "映画 言葉 美しい 新しい".split(),
}
EMOJI = ["😀", "🎉", "👍🏽", "👨‍👩‍👧", "🇯🇵", "❤️", "🍕"]
CODE = ["def f(x):\n    return x * 2\n", "for (int i = 0; i < n; ++i) sum += a[i];\n",
        '{"id": 17, "name": "café", "tags": ["a", "b"]}\n']


def sentence(rng, lang):
    words = [rng.choice(WORDS[lang]) for _ in range(rng.randint(4, 14))]
    joiner = "" if lang in ("zh", "ja") and rng.random() < 0.7 else " "
    text = joiner.join(words)
    if rng.random() < 0.3:
        text += " " + str(rng.randint(0, 10 ** rng.randint(1, 9)))
    if rng.random() < 0.15:
        text += " " + rng.choice(EMOJI)
    end = {"zh": "。", "ja": "。", "hi": "।", "ar": "."}.get(lang, ".")
    return text[0].upper() + text[1:] + end


def main():
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 4000000
    rng = random.Random(1)
    out, total = [], 0
    while total < size:
        lang = rng.choice(list(WORDS))
        paragraph = " ".join(sentence(rng, lang) for _ in range(rng.randint(2, 6)))
        if rng.random() < 0.1:
            paragraph += "\n" + rng.choice(CODE)
        paragraph += rng.choice(["\n\n", "\n", "  \n\n", "\r\n"])
        out.append(paragraph)
        total += len(paragraph.encode("utf-8"))
    sys.stdout.write("".join(out))


if __name__ == "__main__":
    main()
