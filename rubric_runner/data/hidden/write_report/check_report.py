"""REPORT.md has the required sections, each with text, and names both modules."""

import re
import sys
from pathlib import Path

REQUIRED = ("Summary", "Modules", "Risks")
report = Path("REPORT.md")
if not report.is_file():
    sys.exit("REPORT.md is missing")
text = report.read_text(encoding="utf-8")
sections = dict(re.findall(r"^## (.+?)\n(.*?)(?=^## |\Z)", text, flags=re.M | re.S))
missing = [name for name in REQUIRED if not sections.get(name, "").strip()]
if missing:
    sys.exit(f"REPORT.md lacks the sections: {', '.join(missing)}")
for module in ("inventory", "orders"):
    if module not in sections["Modules"]:
        sys.exit(f"the Modules section does not name {module}")
print("REPORT.md has every section")
