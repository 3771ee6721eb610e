"""A submitted script's save file read a study at a time (rexrank.inference.save_file): what an honest file holds
comes back exactly as json.loads reads it, whatever the pieces cut; a hostile one is refused at a bounded cost,
measured in a child."""

import json
import random
import subprocess
import sys
import textwrap

import pytest

from rexrank.inference import save_file
from rexrank.inference.runner import InferenceFailed, read_save
from rexrank.inference.save_file import SaveFileRefused, members

TRICKY = ['plain', 'a "quoted" word', 'back\\slash', 'ends in backslash\\', '{[,]}', 'unicode: é ✓ 𝛼', '\\"', '',
          'line\nbreak', '\u2028', '\\\\"']


def honest(rng: random.Random, studies: int) -> dict:
    return {f"s{i}": {"image_path": [f"s{i}/{j}.png" for j in range(rng.randint(0, 3))],
                      "context": rng.choice(TRICKY), "model_prediction": "".join(rng.choices(TRICKY, k=3)),
                      "extra": {"nested": [rng.choice(TRICKY), {"k": [1, 2.5, None, True]}]}} for i in range(studies)}


@pytest.mark.parametrize("piece", [1, 2, 3, 7, 64, 1 << 20])
def test_an_honest_file_reads_as_json_loads_reads_it_whatever_the_pieces_cut(tmp_path, monkeypatch, piece):
    monkeypatch.setattr(save_file, "PIECE", piece)
    rng = random.Random(piece)
    for indent, ascii_only in ((None, True), (2, False), (None, False)):
        data = honest(rng, 12)
        path = tmp_path / "save.json"
        path.write_text(" \n" + json.dumps(data, indent=indent, ensure_ascii=ascii_only) + "\n ", encoding="utf-8")
        assert list(members(path, 1 << 20, 100)) == list(json.loads(path.read_bytes()).items())


@pytest.mark.parametrize(("text", "said"), [
    (b'[{"s1": 1}]', "not a JSON object of studies"),
    (b'{"s1": ' + b"[" * 40 + b"]" * 40 + b"}", "nests deeper than 16 levels"),
    (b'{"s1": {"model_prediction": "x"}', "ends before its closing bracket"),
    (b'{"s1": {"model_prediction": "x"}} {}', "more than one JSON value"),
    (b'{"s1": 1]', "closed by ']'"),
    (b'{"s1": {"model_prediction": "x", "model_prediction": "y"}}', "a key appears twice"),
    (b'{"s1": {"model_prediction": "\xff"}}', "not JSON"),
    (b'{"s1": {"model_prediction": "' + b"x" * 5000 + b'"}}', "longer than 4,096 bytes"),
    (b'{' + b",".join(b'"s%d": 1' % i for i in range(20)) + b"}", "more than 8 studies"),
])
def test_a_hostile_file_is_refused_by_its_rule(tmp_path, text, said):
    path = tmp_path / "save.json"
    path.write_bytes(text)
    with pytest.raises(SaveFileRefused, match=said):
        list(members(path, 4096, 8))


def test_duplicate_studies_and_lone_surrogates_are_named_by_the_studies_given(tmp_path):
    path = tmp_path / "save.json"
    path.write_text('{"s1": {"model_prediction": "ok"}, "s1": {"model_prediction": "again"},'
                    ' "s2": {"model_prediction": "\\ud800 half a pair"}}')
    with pytest.raises(InferenceFailed) as err:
        read_save(path, ["s1", "s2"], 1 << 20)
    assert ("1 predictions that are not valid Unicode (a lone surrogate) (first: s2); 1 studies written twice "
            "(first: s1)") in str(err.value)


@pytest.mark.subprocess
@pytest.mark.slow
@pytest.mark.parametrize("shape", ["numbers", "deep", "one-string", "many-studies"])
def test_a_200_mb_save_file_costs_a_bounded_read(tmp_path, shape):
    """200 MB of small numbers in one record (json.loads would take gigabytes), lists 100 million deep,
    one 200 MB prediction, or a million made-up studies: each refused, the child's peak memory growing by less than
    a piece and a record (the bound: 1 MiB + RECORD_BYTES, 640 KiB; 16 MiB leaves the interpreter's own slack)."""
    path = tmp_path / "save.json"
    with open(path, "wb") as handle:
        if shape == "numbers":
            handle.write(b'{"s1": {"model_prediction": "x", "junk": [')
            for _ in range(200):
                handle.write(b"0," * 500_000)
            handle.write(b"0]}}")
        elif shape == "deep":
            handle.write(b'{"s1": ' + b"[" * 100_000_000 + b"]" * 100_000_000 + b"}")
        elif shape == "one-string":
            handle.write(b'{"s1": {"model_prediction": "')
            for _ in range(200):
                handle.write(b"x" * 1_000_000)
            handle.write(b'"}}')
        else:
            handle.write(b"{" + b",".join(b'"z%07d": {"model_prediction": "%s"}' % (i, b"y" * 150)
                                          for i in range(1_000_000)) + b"}")
    assert path.stat().st_size > 150_000_000
    child = textwrap.dedent(f"""
        import resource
        from pathlib import Path
        from rexrank.inference.runner import InferenceFailed, read_save
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        try:
            read_save(Path({str(path)!r}), ["s1", "s2"], 1 << 30)
        except InferenceFailed as err:
            print(err)
        print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)
    """)
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=300)
    said, grew = done.stdout.splitlines()
    assert "its save file is refused" in said, done.stderr[-2000:]
    assert int(grew) < 16, said  # MiB
