"""Write stochrank's synthetic ranking data as LETOR/SVMlight files.

    python scripts/make_synthetic.py mslr --out ~/stochrank_data/synthetic-mslr      # 6000/2000/2000 queries
    python scripts/make_synthetic.py mslr --out DIR --queries 60000 20000 20000      # MSLR-WEB30K scale
    python scripts/make_synthetic.py multimodal --out DIR                            # PAPER, CYCLIC, optimum

``mslr`` writes ``DIR/Fold1/{train,vali,test}.txt`` (MSLR's layout; with DIR = <root>/synthetic-mslr they
load as ``stochrank.datasets.load("synthetic-mslr", split=..., root=<root>)``). ``multimodal`` writes
``DIR/{paper,cyclic}.txt`` (one-hot documents, qid = query number) and ``DIR/optimum.json`` with the
enumerated global optimum of train NDCG@3 (worst-case ties) and the orderings that reach it. The data
model is documented in ``stochrank.datasets.synthetic``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from stochrank.datasets import synthetic


def write_mslr(out: Path, queries: list[int], seed: int, gzip: bool) -> None:
    start = time.perf_counter()
    paths = synthetic.write_mslr_like(out, queries, seed=seed)
    if gzip:  # re-write compressed (MSLR itself ships plain text)
        import gzip as gz
        import shutil

        for split, path in list(paths.items()):
            target = path.with_name(path.name + ".gz")
            with open(path, "rb") as src, gz.open(target, "wb") as dst:
                shutil.copyfileobj(src, dst)
            path.unlink()
            paths[split] = target
    for split, path in paths.items():
        print(f"{split:5s} {path} ({path.stat().st_size / 1e6:.1f} MB)")
    print(f"written in {time.perf_counter() - start:.1f} s")


def write_multimodal(out: Path, k: int) -> None:
    summary = {}
    for name, queries in synthetic.MULTIMODAL.items():
        data = synthetic.one_hot_instance(queries)
        synthetic.write_svmlight(data, out / f"{name}.txt")
        weak, strict = synthetic.global_optimum(data.X, data.y, data.group, k=k)
        orders = synthetic.optimal_orders(data.X, data.y, data.group, k=k)
        summary[name] = {
            "queries": [{"documents": list(ids), "labels": list(labels)} for ids, labels in queries],
            f"optimum_ndcg@{k}": weak,
            "optimum_over_strict_orders": strict,
            "optimal_orders": [list(order) for order in orders],
            "order_meaning": "rank of each one-hot document id, 0 = shown first",
        }
        print(f"{name}: optimum train NDCG@{k} {weak:.4f}, reached by rank vectors {orders}")
    (out / "optimum.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(f"written {out}/{{{','.join(synthetic.MULTIMODAL)}}}.txt and {out}/optimum.json")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="kind", required=True)
    mslr = sub.add_parser("mslr", help="MSLR-shaped data (136 features, grades 0..4, ~120 docs/query)")
    mslr.add_argument(
        "--out", type=Path, required=True, help="directory; Fold1/{train,vali,test}.txt go below"
    )
    mslr.add_argument(
        "--queries", type=int, nargs=3, default=[6000, 2000, 2000], metavar=("TRAIN", "VALI", "TEST")
    )
    mslr.add_argument("--seed", type=int, default=0)
    mslr.add_argument("--gzip", action="store_true", help="write .txt.gz files")
    multimodal = sub.add_parser("multimodal", help="PAPER and CYCLIC instances with their enumerated optimum")
    multimodal.add_argument("--out", type=Path, required=True)
    multimodal.add_argument("--k", type=int, default=3, help="NDCG cut-off of the optimum (default 3)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.kind == "mslr":
        write_mslr(args.out, args.queries, args.seed, args.gzip)
    else:
        write_multimodal(args.out, args.k)


if __name__ == "__main__":
    main()
