# Every command in the code blocks of README.md and of the guides (docs/*.md) that runs Python
# (python3, torchrun) must be in .ci/python-stage, as `readme '<command>'` (run there, as written
# or with fewer steps) or as `# untested '<command>'` (cannot run here: several machines).
#
#     python3 .ci/readme_python_commands.py README.md docs/*.md .ci/python-stage
#
# Exits with 1 naming each command missing, as file:line.
import re
import sys


def indented_commands(path):
    """(line number, command) for each indented code line outside ``` fences, a trailing comment cut."""
    commands, fenced = [], False
    for number, line in enumerate(open(path, encoding="utf-8"), start=1):
        line = line.rstrip("\n")
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced or not line.startswith("    "):
            continue
        commands.append((number, re.sub(r"\s{2,}#.*$", "", line.strip())))  # a trailing comment
    return commands


def uses_python(command):
    return re.search(r"(^|[\s/])(python3|torchrun)\s", command) is not None


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: readme_python_commands.py README.md [docs/GUIDE.md ...] .ci/python-stage")
    docs, stage_path = sys.argv[1:-1], sys.argv[-1]
    stage = open(stage_path, encoding="utf-8").read()
    python_commands, missing = 0, False
    for doc in docs:
        for number, command in indented_commands(doc):
            if not uses_python(command):
                continue
            python_commands += 1
            if f"readme '{command}'" not in stage and f"untested '{command}'" not in stage:
                print(f"readme_python_commands: {doc}:{number}: this command is not in {stage_path}: {command}",
                      file=sys.stderr)
                missing = True
    if missing:
        sys.exit(1)
    print(f"readme_python_commands: the {python_commands} Python commands of {' '.join(docs)} are all in {stage_path}")


if __name__ == "__main__":
    main()
