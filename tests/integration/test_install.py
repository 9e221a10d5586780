"""`cmake --install` into a temporary prefix, the way a packager or a user
does, then what they would check: every file in its GNUInstallDirs place, the
shared library's soname and exports, and examples/embed.c built against the
installed library with `pkg-config --cflags --libs libptybox`, run, showing
the demo."""
import filecmp
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from ptybox_test import PTYBOX, VIA

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("PTYBOX_BUILD_DIR") or os.path.dirname(os.path.realpath(PTYBOX))


def cache_value(name):
    """A value of the build's CMakeCache.txt, or None."""
    with open(os.path.join(BUILD, "CMakeCache.txt")) as f:
        for line in f:
            m = re.match(r"%s:[A-Z]+=(.*)$" % re.escape(name), line.strip())
            if m:
                return m.group(1)
    return None


def check(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, check=True, **kw)


@unittest.skipUnless(os.path.exists(os.path.join(BUILD, "CMakeCache.txt")),
                     "PTYBOX is not in a CMake build folder (set PTYBOX_BUILD_DIR)")
class TestInstall(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ptybox-install-")
        cls.prefix = os.path.join(cls.tmp, "prefix")
        cls.install = subprocess.run(
            [shutil.which("cmake") or "cmake", "--install", BUILD, "--prefix", cls.prefix],
            capture_output=True, text=True, timeout=300)
        cls.libdir = os.path.join(cls.prefix, cache_value("CMAKE_INSTALL_LIBDIR") or "lib")
        cls.env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(cls.libdir, "pkgconfig"),
                       LD_LIBRARY_PATH=cls.libdir)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        self.assertEqual(self.install.returncode, 0, self.install.stderr)

    def path(self, *parts):
        return os.path.join(self.prefix, *parts)

    def test_files_in_their_places(self):
        same = {
            ("share", "man", "man1", "ptybox.1"): ("man", "ptybox.1"),
            ("share", "man", "man7", "ptybox-protocol.7"): ("man", "ptybox-protocol.7"),
            ("share", "bash-completion", "completions", "ptybox"): ("completions", "ptybox.bash"),
            ("share", "zsh", "vendor-completions", "_ptybox"): ("completions", "_ptybox"),
            ("share", "fish", "vendor_completions.d", "ptybox.fish"):
                ("completions", "ptybox.fish"),
            ("include", "ptybox.h"): ("include", "ptybox.h"),
        }
        for dest, src in same.items():
            with self.subTest(dest=os.path.join(*dest)):
                self.assertTrue(filecmp.cmp(self.path(*dest), os.path.join(TOP, *src),
                                            shallow=False))
        self.assertTrue(os.access(self.path("bin", "ptybox"), os.X_OK))
        p = check([self.path("bin", "ptybox"), "--version"])
        self.assertRegex(p.stdout, r"^ptybox \d+\.\d+\.\d+\n$")

    def test_shared_library_has_a_soname(self):
        real = os.path.realpath(os.path.join(self.libdir, "libptybox.so"))
        self.assertRegex(os.path.basename(real), r"^libptybox\.so\.\d+\.\d+\.\d+$")
        major = os.path.basename(real).split(".")[2]
        soname = "libptybox.so." + major
        self.assertEqual(os.readlink(os.path.join(self.libdir, "libptybox.so")), soname)
        self.assertTrue(os.path.exists(os.path.join(self.libdir, soname)))
        d = check(["readelf", "-d", real]).stdout
        self.assertIn("Library soname: [%s]" % soname, d)
        # The static archives stay internal.
        self.assertEqual([f for f in os.listdir(self.libdir) if f.endswith(".a")], [])

    def test_exports_exactly_the_public_api(self):
        with open(self.path("include", "ptybox.h")) as f:
            header = f.read()
        code = re.sub(r"/\*.*?\*/", "", header, flags=re.S)
        # Outside comments, a name followed by "(" is a function declared.
        declared = set(re.findall(r"\b(ptybox_\w+)\s*\(", code))
        self.assertIn("ptybox_session_new", declared)
        # A function declared without PTYBOX_API would be hidden in the library.
        for name in sorted(declared):
            with self.subTest(name=name):
                self.assertRegex(code, r"PTYBOX_API [^;(]*\b%s\(" % name)
        nm = check(["nm", "-D", "--defined-only", os.path.join(self.libdir, "libptybox.so")])
        symbols = {line.split()[-1] for line in nm.stdout.splitlines()
                   if len(line.split()) == 3 and line.split()[1] in "TtDdBbRrWwVv"}
        self.assertEqual(symbols, declared)

    def test_pkg_config(self):
        p = check(["pkg-config", "--modversion", "libptybox"], env=self.env)
        version = check([self.path("bin", "ptybox"), "--version"]).stdout.split()[1]
        self.assertEqual(p.stdout.strip(), version)
        flags = check(["pkg-config", "--cflags", "--libs", "libptybox"], env=self.env).stdout
        self.assertIn("-lptybox", flags.split())
        self.assertIn("-luv", flags.split())  # ptybox.h includes <uv.h>
        static = check(["pkg-config", "--static", "--libs", "libptybox"], env=self.env).stdout
        for lib in ("-lcjson", "-lsodium", "-lvterm", "-lseccomp", "-lutil"):
            self.assertIn(lib, static.split())

    def build_embed(self):
        """examples/embed.c against the installed library, as its comment says."""
        flags = check(["pkg-config", "--cflags", "--libs", "libptybox"],
                      env=self.env).stdout.split()
        # A library built with ASan needs its runtime loaded first: the program
        # then takes the same sanitizers.
        needed = check(["readelf", "-d", os.path.join(self.libdir, "libptybox.so")]).stdout
        if "libasan" in needed:
            flags.append("-fsanitize=address,undefined")
        out = os.path.join(self.tmp, "embed")
        if not os.path.exists(out):
            p = subprocess.run([os.environ.get("CC", "cc"), "-Wall", "-Wextra", "-Werror",
                                os.path.join(TOP, "examples", "embed.c"), *flags, "-o", out],
                               capture_output=True, text=True, timeout=300, cwd=self.tmp)
            self.assertEqual(p.returncode, 0, p.stderr)
        return out

    def test_embed_replays_the_demo(self):
        exe = self.build_embed()
        p = subprocess.run([exe, VIA], capture_output=True, text=True, timeout=120,
                           env=self.env, cwd=self.tmp)
        # As `sh examples/demo.sh` shows it; the last snippet fails on purpose.
        self.assertEqual(p.stdout, "hello, world!\nThe result is: 15\n", p.stderr)
        self.assertIn("Traceback (most recent call last):\n", p.stderr)
        self.assertIn('  File "<exec-6>", line 1, in <module>\n', p.stderr)
        self.assertTrue(p.stderr.endswith("ZeroDivisionError: division by zero\n"), p.stderr)
        self.assertEqual(p.returncode, 1, p.stderr)

    def test_embed_bad_via_is_one_line(self):
        exe = self.build_embed()
        p = subprocess.run([exe, "nowhere"], capture_output=True, text=True, timeout=60,
                           env=self.env, cwd=self.tmp)
        self.assertEqual(p.returncode, 125, p.stderr)
        self.assertEqual(p.stdout, "")
        self.assertRegex(p.stderr, r"^embed: [^\n]*nowhere[^\n]*\n$")


if __name__ == "__main__":
    unittest.main()
