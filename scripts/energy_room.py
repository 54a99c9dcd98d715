"""The room for energy saving as docs/energy.md and the README publish it: from the output
dirs of `mobrl baselines` on energy layouts (all_on, the cell rules and energy_oracle on the
same seeds), a Markdown table per layout of service (mean and p5 UE utility, connected
fraction, demand served) and energy (the episode's energy and its paired change against
`all_on`, stations asleep), each policy's mean and its paired difference to `all_on` with a
95 % CI, then the gap between `threshold` and the reference in energy.

    mobrl baselines scenario=uma19_energy --baselines all_on,idle_off,threshold,energy_oracle \\
        --episodes 100 --seed 1000 --output room/uma19_energy
    python scripts/energy_room.py room/uma19_energy [room/umi_dense_energy ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from mobrl.core import metrics as keys

SERVICE = (
    (keys.UTILITY_MEAN, "UE utility", 3),
    (keys.UTILITY_P5, "p5 utility", 3),
    (keys.NET_CONNECTED, "connected", 4),
    (keys.NET_DEMAND_SERVED, "demand served", 4),
)


def _pm(stats: dict) -> str:
    return f"{stats['mean']:+.3f} ± {stats['ci95']:.3f}"


def table(folder: Path) -> str:
    summary = json.loads((folder / "summary.json").read_text())
    pol, ref = summary["policies"], summary["reference"]
    paired = summary[f"paired_vs_{ref}"]
    base = pol[ref][keys.NET_ENERGY]["mean"]
    head = ["policy", *(label for _, label, _ in SERVICE), "energy (vs all_on)", "asleep"]
    rows = ["| " + " | ".join(head) + " |", "|---" + "|---:" * (len(head) - 1) + "|"]
    for name, stats in pol.items():
        cells = [f"`{name}`"]
        for key, _, digits in SERVICE:
            mean = stats[key]["mean"]
            cell = f"{mean:.{digits}f}"
            if name != ref:
                diff = paired[name]["diff"][key]
                cell += f" ({diff['mean']:+.{digits}f} ± {diff['ci95']:.{digits}f})"
            cells.append(cell)
        energy = stats[keys.NET_ENERGY]["mean"]
        if name == ref:
            cells.append(f"{energy:,.0f}")
        else:
            diff = paired[name]["diff"][keys.NET_ENERGY]
            cells.append(f"{energy:,.0f} ({diff['mean'] / base:+.1%} ± {diff['ci95'] / base:.1%})")
        cells.append(f"{stats[keys.NET_ASLEEP]['mean']:.2f}")
        rows.append("| " + " | ".join(cells) + " |")
    gap = ""
    if "threshold" in pol and "energy_oracle" in pol:
        t, o = (
            pol["threshold"][keys.NET_ENERGY]["mean"],
            pol["energy_oracle"][keys.NET_ENERGY]["mean"],
        )
        gap = (f"\n`energy_oracle` uses {1 - o / t:.1%} less energy than `threshold` "
               f"({o:,.0f} against {t:,.0f}).")  # fmt: skip
    episodes = summary["episodes"]
    seeds = summary.get("seed_range")
    title = f"**{summary['scenario']}** ({episodes} episodes, seeds {seeds})"
    return title + "\n\n" + "\n".join(rows) + "\n" + gap


def main() -> None:
    for arg in sys.argv[1:]:
        print(table(Path(arg)))
        print()


if __name__ == "__main__":
    main()
