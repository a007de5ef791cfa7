"""The build step that puts the files shipped at the repository root into the wheel.

`sql_templates/` and the default `lanes.yaml` stay at the root (the layout users edit);
the wheel carries them as `pipelines/shipped/`, where pipelines/shipped.py looks first. Editable
installs skip the copy and read the root directly.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
SHIPPED = ("sql_templates", "lanes.yaml", "lanes.conversations.yaml")


class BuildWithShippedFiles(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        target = Path(self.build_lib) / "pipelines" / "shipped"
        # A file removed from the repository must not survive in an earlier build's copy.
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        for name in SHIPPED:
            source = ROOT / name
            if source.is_dir():
                shutil.copytree(source, target / name, dirs_exist_ok=True)
            else:
                shutil.copy2(source, target / name)


setup(cmdclass={"build_py": BuildWithShippedFiles})
