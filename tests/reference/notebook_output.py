# notebook_output.py — what the make_notebook_*_reference.py scripts share: the marker lines
# the examples print ("In [5]:", or a heading) and writing what was printed to a committed file.
import io
import os
from contextlib import redirect_stdout

_first = [True]


def marker(label):
    """A line naming the part whose output follows; a blank line before it except at the top."""
    if not _first[0]:
        print()
    _first[0] = False
    print(label)


def cell(label):
    marker("In [%s]:" % label)


def write_output(main, file_name):
    """Run main(), capturing what it prints, into tests/reference/<file_name>."""
    out = io.StringIO()
    with redirect_stdout(out):
        main()
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), file_name)
    with open(path, "w") as f:
        f.write(out.getvalue())
    print("wrote", path)
