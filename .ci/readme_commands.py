"""Print the README's set-up commands (the first bash block under "## Set-up"), as written."""

import sys
from pathlib import Path

text = Path(sys.argv[1]).read_text()
section = text.split("\n## Set-up", 1)[1]
block = section.split("```bash\n", 1)[1].split("```", 1)[0]
commands = [line for line in block.splitlines() if line.strip() and not line.startswith("#")]
if len(commands) != 2:
    sys.exit(f"the README's set-up block has {len(commands)} commands, not 2:\n{block}")
print(block)
