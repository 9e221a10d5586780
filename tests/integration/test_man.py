"""The manual pages: both render without a warning, and ptybox(1) covers what
the program itself says it has: every subcommand of `ptybox --help`, every
option of each subcommand's --help, every exit status a help lists, every
environment variable the code reads, and the sections a man page has."""
import glob
import os
import re
import shlex
import subprocess
import unittest

from ptybox_test import PTYBOX

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PAGES = [os.path.join(TOP, "man", "ptybox.1"), os.path.join(TOP, "man", "ptybox-protocol.7")]
ALTERNATING = {"BR", "RB", "BI", "IB", "IR", "RI"}


def text_of(line):
    """One line of man(7) source as the words it shows: font macros and
    escapes gone, alternating-font arguments joined as troff joins them."""
    line = line.rstrip("\n")
    macro = None
    if line.startswith(".") or line.startswith("'"):
        if line.startswith(('.\\"', "'\\\"")):
            return ""
        parts = line[1:].split(None, 1)
        if not parts:
            return ""
        macro, line = parts[0], parts[1] if len(parts) > 1 else ""
    line = line.replace("\\-", "-").replace("\\(aq", "'").replace("\\(dq", '"')
    line = re.sub(r"\\f(\[[^]]*\]|\(..|.)", "", line)
    line = re.sub(r"\\\((..)", "", line)
    line = line.replace("\\&", "").replace("\\c", "").replace("\\e", "\\").replace("\\ ", " ")
    if macro in ALTERNATING or macro in ("B", "I", "SM", "SB", "SH", "SS"):
        try:
            args = shlex.split(line, posix=True)
        except ValueError:
            args = line.split()
        return ("" if macro in ALTERNATING else " ").join(args)
    return line if macro in (None, "TP", "IP", "TQ") else ""


def sections(path):
    """{SECTION: [(is_tag, text) per line]} of a page; a tag is the line
    after .TP (or .TQ): the term a paragraph describes."""
    out, name, tag_next = {}, None, False
    with open(path) as f:
        for raw in f:
            if raw.startswith(".SH"):
                name = text_of(raw).strip()
                out[name] = []
                continue
            if raw.startswith((".TP", ".TQ")):
                tag_next = True
                continue
            if name is not None:
                out[name].append((tag_next, text_of(raw)))
            tag_next = False
    return out


def words(text):
    return set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*|[A-Za-z_][\w-]*|\d+)", text))


def ptybox(*args):
    p = subprocess.run([PTYBOX, *args], capture_output=True, text=True, timeout=30)
    return p


def subcommands():
    """The subcommands `ptybox --help` lists: the lowercase words of each
    entry's usage column (what comes before the two blanks of the description)."""
    names = []
    for line in ptybox("--help").stdout.splitlines():
        if not line.startswith("  ") or line.strip().startswith("-"):
            continue
        # ("interrupt, cancel, restart, kill NAME;  kill-server": a ";" goes on)
        fields = re.split(r"\s{2,}", line.strip())
        usage = fields[0]
        for field in fields[1:]:
            if not usage.endswith(";"):
                break
            usage += " " + field
        for token in re.split(r"[\s,;]+", usage):
            if re.fullmatch(r"[a-z][a-z-]*", token):
                names.append(token)
    return list(dict.fromkeys(names))


def options_of(help_text):
    """Every option an --help names: in its usage line and its option lines."""
    found = []
    for line in help_text.splitlines():
        if line.startswith("Usage:") or re.match(r"\s+-", line):
            found += re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", line)
    return list(dict.fromkeys(found))


class TestRender(unittest.TestCase):
    def test_groff_has_no_warning(self):
        for page in PAGES:
            for macros in ("-man", "-mandoc"):
                with self.subTest(page=os.path.basename(page), macros=macros):
                    p = subprocess.run(["groff", "-ww", "-z", macros, "-Tutf8", page],
                                       capture_output=True, text=True, timeout=60)
                    self.assertEqual((p.returncode, p.stderr), (0, ""))


class TestCoverage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.page = sections(PAGES[0])
        cls.all_words = set()
        for lines in cls.page.values():
            for _, text in lines:
                cls.all_words |= words(text)

    def tags(self, section):
        found = set()
        for is_tag, text in self.page.get(section, []):
            if is_tag:
                found |= words(text)
        return found

    def test_sections(self):
        for name in ("NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "OPTIONS", "EXIT STATUS",
                     "ENVIRONMENT", "FILES", "SECURITY", "EXAMPLES", "SEE ALSO"):
            self.assertIn(name, self.page.keys())

    def test_every_subcommand(self):
        names = subcommands()
        self.assertIn("run", names)
        self.assertIn("kill-server", names)
        synopsis = set()
        for _, text in self.page["SYNOPSIS"]:
            synopsis |= words(text)
        for name in names:
            with self.subTest(subcommand=name):
                self.assertEqual(ptybox(name, "--help").returncode, 0)
                self.assertIn(name, self.tags("COMMANDS"))
                self.assertIn(name, synopsis)

    def test_every_option(self):
        run_opts = options_of(ptybox("run", "--help").stdout)
        self.assertIn("--json", run_opts)
        self.assertIn("--via", run_opts)
        # run's own and the session options each have a paragraph of their own.
        for opt in run_opts:
            with self.subTest(command="run", option=opt):
                self.assertIn(opt, self.tags("OPTIONS") | self.tags("COMMANDS"))
        for name in subcommands() + [""]:
            text = ptybox(*([name] if name else []), "--help").stdout
            for opt in options_of(text):
                with self.subTest(command=name, option=opt):
                    self.assertIn(opt, self.all_words)

    def test_every_exit_status(self):
        tags = self.tags("EXIT STATUS")
        for name in subcommands():
            text = ptybox(name, "--help").stdout
            m = re.search(r"Exit status:(.*?)(?:\n\n|\Z)", text, re.S)
            if not m:
                continue
            for status in re.findall(r"(?<![\w.])(\d{1,3})(?![\w.+])", m.group(1)):
                with self.subTest(command=name, status=status):
                    self.assertIn(status, tags)

    def test_every_environment_variable(self):
        read = set()
        for src in glob.glob(os.path.join(TOP, "src", "*.c")):
            with open(src) as f:
                read |= set(re.findall(r'getenv\("([A-Z_][A-Z0-9_]*)"\)', f.read()))
        self.assertIn("NO_COLOR", read)
        for var in sorted(read):
            with self.subTest(variable=var):
                self.assertIn(var, self.tags("ENVIRONMENT"))

    def test_examples_reach_other_machines(self):
        text = "\n".join(t for _, t in self.page["EXAMPLES"])
        for needle in ("--via ssh://", "-H ssh://", "--via exec:", "docker exec",
                       "kubectl exec", "pkg-config --cflags --libs libptybox"):
            with self.subTest(example=needle):
                self.assertTrue(needle in text, "%r not in EXAMPLES" % needle)


if __name__ == "__main__":
    unittest.main()
