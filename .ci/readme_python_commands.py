# Every command in README.md's code blocks that runs Python (python3, torchrun) must be in
# .ci/python-stage, as `readme '<command>'` (run there, as written or with fewer steps) or as
# `# untested '<command>'` (cannot run here: several machines). Exits with 1 naming the ones missing.
import re
import sys


def readme_commands(path):
    commands, fenced = [], False
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced or not line.startswith("    "):
            continue
        command = re.sub(r"\s{2,}#.*$", "", line.strip())  # a trailing comment
        if re.search(r"(^|[\s/])(python3|torchrun)\s", command):
            commands.append(command)
    return commands


def main():
    readme, stage = sys.argv[1], open(sys.argv[2], encoding="utf-8").read()
    commands = readme_commands(readme)
    missing = [c for c in commands if f"readme '{c}'" not in stage and f"untested '{c}'" not in stage]
    for c in missing:
        print(f"readme_python_commands: README.md's command is not in {sys.argv[2]}: {c}", file=sys.stderr)
    if missing:
        sys.exit(1)
    print(f"readme_python_commands: the README's {len(commands)} Python commands are all in {sys.argv[2]}")


if __name__ == "__main__":
    main()
