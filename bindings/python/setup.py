"""Records where libgcoll.so.1 is at install time (gcoll/_install.py), so that the installed
package finds it without GCOLL_LIBRARY: $GCOLL_LIBRARY if set, else this source tree's
lib/libgcoll.so.1 when it has been built. The rest of the metadata is in pyproject.toml."""
import os

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


def recorded_library():
    env = os.environ.get("GCOLL_LIBRARY")
    if env:
        return os.path.abspath(env)
    tree = os.path.normpath(os.path.join(HERE, "..", "..", "lib", "libgcoll.so.1"))
    return tree if os.path.exists(tree) else None


class BuildPyRecordingLibrary(build_py):
    def run(self):
        super().run()
        target = os.path.join(self.build_lib, "gcoll", "_install.py")
        with open(target, "w") as f:
            f.write("# Written at install by setup.py: the libgcoll found then.\n")
            f.write("LIBRARY = %r\n" % recorded_library())


setup(cmdclass={"build_py": BuildPyRecordingLibrary})
