"""``hanrag milvus push`` / ``status``: an embedded index mirrored into a Milvus collection (README: Milvus
cluster); pymilvus is imported inside each command."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hanrag.commands.common import ConfigOpt, JsonOpt, console, data, fail, load, plain, print_json
from hanrag.config import Config

milvus_app = typer.Typer(no_args_is_help=True, help="Mirror an index into Milvus (see README: Milvus cluster).")

UriOpt = Annotated[str | None, typer.Option("--uri", help="Milvus URI (overrides milvus.uri)")]
CollectionOpt = Annotated[str | None, typer.Option("--collection", help="collection (overrides milvus.collection)")]


def _milvus_backend(
    config: Path | None, uri: str | None, collection: str | None, *, complete: bool, cfg: Config | None = None
):
    from hanrag.backends.milvus import MilvusBackend, MilvusError

    cfg = cfg or load(config)
    if uri:
        cfg.milvus.uri = uri
    if collection:
        cfg.milvus.collection = collection
    if not cfg.milvus.uri:
        fail("milvus.uri is not set", "set [milvus] uri in hanrag.toml, HANRAG_MILVUS__URI, or pass --uri")
    try:
        return cfg, MilvusBackend(cfg, require_complete=complete)
    except MilvusError as exc:
        fail(str(exc), "check milvus.uri / token / db_name and that the server is up")
        raise  # unreachable


@milvus_app.command("push")
def milvus_push(
    index: Annotated[Path, typer.Argument(help="embedded index folder (built with `hanrag build`)")],
    config: ConfigOpt = None,
    uri: UriOpt = None,
    collection: CollectionOpt = None,
    renormalize: Annotated[bool, typer.Option("--renormalize", help="recompute every BM25 tf part")] = False,
    recreate: Annotated[bool, typer.Option("--recreate", help="drop and rebuild the collection")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Push an index's current snapshot into Milvus: only chunks whose content hash changed are written."""
    from hanrag.backends.milvus import MilvusError, redact_uri
    from hanrag.index.store import IndexLoadError

    cfg, backend = _milvus_backend(config, uri, collection, complete=False)
    try:
        report = backend.sync_from_snapshot(index, renormalize=renormalize, recreate=recreate)
    except IndexLoadError as exc:
        fail(str(exc), "build the index first: hanrag build CORPUS --index DIR")
    except MilvusError as exc:
        fail(str(exc), "rerun the push once the problem is fixed: it resumes by content hash")
    if json_out:
        print_json({"uri": redact_uri(cfg.milvus.uri), "collection": cfg.milvus.collection, **report.to_dict()})
    else:
        console.print(
            f"{plain(cfg.milvus.collection)} @ {plain(redact_uri(cfg.milvus.uri))}: {report.upserted} upserted, "
            f"{report.deleted} deleted, {report.unchanged} unchanged, {report.total} chunks"
            + (", BM25 re-normalised" if report.renormalized else "")
            + f" ({report.seconds:.1f} s)"
        )


@milvus_app.command("status")
def milvus_status(
    config: ConfigOpt = None, uri: UriOpt = None, collection: CollectionOpt = None, json_out: JsonOpt = False
) -> None:
    """Show a Milvus collection's state: complete or interrupted, counts, the snapshot it mirrors."""
    from hanrag.backends.milvus import MilvusError

    cfg, backend = _milvus_backend(config, uri, collection, complete=False)
    try:
        info = backend.manifest().get("backend", {})
    except MilvusError as exc:
        fail(str(exc), "push an index first: hanrag milvus push INDEX")
    if json_out:
        print_json(info)
    else:
        for key, value in info.items():
            console.print(data(f"{key}: {value}"))
    if info.get("state") != "complete":
        raise typer.Exit(1)
