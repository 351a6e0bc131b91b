# examples/data/make_messages.py — writes messages.tsv, a small labelled set in the SMS Spam
# Collection's layout ("ham<TAB>text" or "spam<TAB>text" a line, no header row), so that the
# classification fine-tune (train_gpt --task classify --columns label,text) runs offline. The
# messages are the project's own, made from the templates below; about one in seven is spam, as in
# the real collection (747 of 5,574).
#
#   python3 examples/data/make_messages.py examples/data/messages.tsv
import random
import sys

NAMES = ["Sam", "Priya", "Tom", "Mia", "Leo", "Ana", "Ben", "Zoe", "Omar", "Kate"]
PLACES = ["the station", "the cafe", "your mum's", "the library", "the gym", "work", "the park", "town"]
TIMES = ["at 6", "tonight", "tomorrow", "after lunch", "in 10 mins", "on Friday", "later", "this weekend"]
THINGS = ["milk", "the keys", "my charger", "the tickets", "some bread", "your jacket", "the notes", "a pizza"]
HAM = [
    "Hey {n}, are we still meeting at {p} {t}?",
    "Can you pick up {x} on your way home?",
    "I'm running late, be there {t}.",
    "Did you see {n} at {p}? She looked well.",
    "Ok see you {t} then :)",
    "Sorry, I left {x} at {p}. Will grab it {t}.",
    "Thanks for today, it was really nice.",
    "Call me when you get to {p}.",
    "Dinner {t}? I can cook if you bring {x}.",
    "Just got home. How was your day?",
    "Don't forget {x}! We need it {t}.",
    "{n} says hi. We're at {p} if you want to come.",
    "Haha yes, that's so true. Talk {t}.",
    "Is {p} open {t}? I need {x}.",
    "Happy birthday {n}! Have a great day.",
]
PRIZES = ["a £1000 cash prize", "a FREE holiday", "a new mobile phone", "£500 in vouchers", "a FREE ringtone",
          "2 FREE cinema tickets", "a £250 award"]
NUMBERS = ["09061701461", "08712300220", "87121", "80062", "09050000327", "85069"]
SPAM = [
    "URGENT! You have won {z}. Call {c} now to claim. T&Cs apply.",
    "Congratulations! You've been selected for {z}. Txt WIN to {c}.",
    "FREE entry into our weekly draw for {z}! Text CLAIM to {c} now.",
    "WINNER!! As a valued customer you get {z}. Call {c} within 12 hrs.",
    "Your mobile number has won {z}! To claim call {c}. 150p/min.",
    "Claim {z} today: reply YES to {c}. Offer ends tonight!",
    "You are awarded {z}. Call {c} from a landline. Box 42 W1 7XX.",
]


def message(rng, spam):
    if spam:
        return rng.choice(SPAM).format(z=rng.choice(PRIZES), c=rng.choice(NUMBERS))
    return rng.choice(HAM).format(n=rng.choice(NAMES), p=rng.choice(PLACES), t=rng.choice(TIMES),
                                  x=rng.choice(THINGS))


def main(out_path, count=400, seed=6):
    rng = random.Random(seed)
    with open(out_path, "w", encoding="utf-8") as f:
        for _ in range(count):
            spam = rng.random() < 0.14
            f.write(("spam" if spam else "ham") + "\t" + message(rng, spam) + "\n")
    print(f"make_messages.py: wrote {count} messages to {out_path}")


if __name__ == "__main__":
    main(sys.argv[1])
