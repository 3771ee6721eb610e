"""The library's packages in layers (docs/architecture.md): a unit (a package or a top-level module of rexrank) imports
only units of lower layers, counting imports inside functions and under TYPE_CHECKING, so no two units import each
other, however indirectly; and every unit has its layer written down, so a new one is placed on purpose."""

import ast
import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "src" / "rexrank"
DOC = ROOT / "docs" / "architecture.md"


def unit(module: str) -> str | None:
    """The unit a module belongs to: `rexrank.data.split` -> `data`; None outside rexrank."""
    parts = module.split(".")
    return (parts[1] if len(parts) > 1 else "rexrank") if parts[0] == "rexrank" else None


def imports() -> dict[str, dict[str, set[str]]]:
    """unit -> the units it imports -> the files that do."""
    found: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for path in SOURCE.rglob("*.py"):
        relative = path.relative_to(SOURCE.parent).with_suffix("")
        me = unit(".".join(relative.parts).removesuffix(".__init__"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                # `from rexrank import demo` imports the unit demo, not the package's __init__ alone
                names = [f"{node.module}.{a.name}" for a in node.names] if node.module == "rexrank" else [node.module]
            else:
                continue
            for name in names:
                other = unit(name)
                if other == "rexrank" or (other and not (SOURCE / other).exists()
                                          and not (SOURCE / f"{other}.py").exists()):
                    other = "rexrank"  # a name the package's __init__ defines
                if other and other != me:
                    found[me][other].add(path.relative_to(SOURCE).as_posix())
    return found


def layers() -> dict[str, int]:
    """unit -> its layer, from docs/architecture.md's table (`| 3 | data, models | ... |`)."""
    text = DOC.read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d+) \| ([^|]+) \|", text, re.MULTILINE)
    return {name.strip(" `"): int(layer) for layer, names in rows for name in names.split(",")}


def units() -> set[str]:
    return {p.stem if p.is_file() else p.name for p in SOURCE.iterdir()
            if (p.suffix == ".py" and p.stem != "__init__") or (p.is_dir() and (p / "__init__.py").exists())}


def test_every_unit_has_its_layer_written_down():
    known = layers()
    assert sorted(units() - set(known)) == [], "place each new unit on a layer of docs/architecture.md"
    assert sorted(set(known) - units() - {"rexrank"}) == [], "docs/architecture.md names a unit that is gone"


def test_a_unit_imports_only_lower_layers():
    known = layers()
    wrong = [f"{a} (layer {known[a]}) imports {b} (layer {known[b]}) in {', '.join(sorted(files))}"
             for a, targets in imports().items() for b, files in targets.items()
             if a in known and b in known and known[a] <= known[b]]
    assert wrong == []


def test_no_two_units_import_each_other():
    found = imports()
    both = sorted({tuple(sorted((a, b))) for a in found for b in found[a] if a in found.get(b, {})})
    assert both == []


def test_the_runners_prediction_bound_is_the_rules_predictions_line():
    """Stated twice, on two layers (inference below rules): held equal here."""
    from rexrank.inference.runner import MAX_PREDICTION
    from rexrank.rules.limits import LINE_JSON

    assert MAX_PREDICTION == LINE_JSON.max_bytes


def test_only_the_metrics_package_asks_a_metric_its_kind():
    """Outside `rexrank.scorers` a metric is asked what it does (`Spec.per_text`, `judged`, `report`, `made_from`, its
    declared presentation), never what kind it is: no `Kind`, no kind set, no per-kind registry (docs/architecture.md,
    "One metric shape"). Read from the imports, so an alias (`from ... import JUDGED as J`) counts too."""
    kinds = {"Kind", "NOT_REPORTS", "SCORERS", "JUDGED", "COMPOSITES", "AGGREGATED"}
    found = []
    for path in [*SOURCE.rglob("*.py"), *(ROOT / "metrics").glob("*.py")]:
        if (SOURCE / "scorers") in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("rexrank.scorers"):
                found += [f"{path.relative_to(ROOT)}:{node.lineno} {a.name}" for a in node.names if a.name in kinds]
            elif isinstance(node, ast.Attribute) and node.attr == "kind" and _a_spec(node.value):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {ast.unparse(node)}")
    assert found == []


def _a_spec(node: ast.expr) -> bool:
    """Whether an expression is a metric's spec as the code names one: `made`, `metric`, `spec(name)`,
    `REGISTRY[name]`."""
    if isinstance(node, ast.Name):
        return node.id in {"made", "metric"}
    if isinstance(node, ast.Call):
        return isinstance(node.func, ast.Name) and node.func.id == "spec"
    return isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "REGISTRY"
