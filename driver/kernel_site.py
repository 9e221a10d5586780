"""site, deferred: the interpreter starts with -S, and site (site-packages,
.pth files, sitecustomize) comes when the kernel is idle or at the first
import the standard library cannot satisfy; and the hooks that run code
once a module is imported.

Not a module: joined into kernel.py where it says "# @include
kernel_site.py"; it uses kernel.py's globals.
"""
# ---- kernel_site.py: joined into kernel.py at build time (driver_join.py, "# @include")

def _readable(fd, timeout):
    try:
        return bool(select.select([fd], [], [], timeout)[0])
    except (OSError, ValueError):
        return True


class _OnImport:
    """A finder that calls then(module) right after the module called name is
    imported, whoever imports it (and then leaves sys.meta_path)."""

    def __init__(self, name, then):
        self.name, self.then = name, then

    def find_spec(self, name, path=None, target=None):
        if name != self.name:
            return None
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        spec = _MODULES["_frozen_importlib_external"].PathFinder.find_spec(name, path, target)
        if spec is not None and spec.loader is not None:
            spec.loader = _ThenLoader(spec.loader, self.then)
        return spec


class _ThenLoader:
    """A module's own loader, and then(module) once it has run."""

    def __init__(self, loader, then):
        self._loader, self._then = loader, then

    def __getattr__(self, name):             # (get_source, get_filename, ...)
        return getattr(self._loader, name)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        try:
            self._then(module)
        except Exception:
            pass


class _DeferredSite:
    """The interpreter starts with -S: importing site (the site-packages
    directories, .pth files, sitecustomize) takes as long again as the
    interpreter's own start-up.  So it comes when the driver is idle (no
    request SITE_WAIT after ready, or none waiting after a result) or at the
    first import that the standard library cannot satisfy, whichever is
    first; exit(), quit() and help() are there from the start.  (Kernels
    forked once the template has it do not need it.)"""

    def __init__(self, driver):
        import _sitebuiltins
        self.driver = driver
        builtins.exit = _sitebuiltins.Quitter("exit", "Ctrl-D (i.e. EOF)")
        builtins.quit = _sitebuiltins.Quitter("quit", "Ctrl-D (i.e. EOF)")
        builtins.help = _sitebuiltins._Helper()
        self.tries = 0
        sys.meta_path.append(self)

    def find_spec(self, name, path=None, target=None):
        if path is not None:
            return None                      # a submodule: its package was found
        self.load()
        return _MODULES["_frozen_importlib_external"].PathFinder.find_spec(name, None, target)

    def load(self):
        self.driver.site = None
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        path = sys.path[:]
        try:
            import site
            sys.path[:] = [p for p in path if p != ""]
            site.main()                      # (which would make "" the absolute cwd)
            if "" in path:
                sys.path.insert(0, "")
            self.driver._packages_place()    # (before the site-packages site added)
            import linecache                 # for tracebacks, as site would have it
            linecache.cache
            self.driver._flush_sources()
        except BaseException:
            # Cut short, by a user's signal handler say: again, later, a few
            # times (a sitecustomize that always fails must not cost every
            # idle moment).  site.main() run twice adds nothing twice.
            if "" in path and "" not in sys.path:
                sys.path.insert(0, "")
            self.tries += 1
            if self.tries < SITE_TRIES:
                self.driver.site = self
                sys.meta_path.append(self)
