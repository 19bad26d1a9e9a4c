"""The persistent contract (puzzle 30), checked from a run's recorded stores: every output tile computed once.

Right values are not enough: a loop that steps by 1 instead of NUM_PROGRAMS has program 0 compute every tile,
program 1 every tile but the first, and so on; each stores the same values, so z is right, and the GPU does the
work several times over (and, were the values to differ by a rounding, keeps whichever program finished last).
Tiles are named by (tile row, tile column), as puzzle 16's order names them.
"""

from __future__ import annotations

import linecache

import numpy as np

from puzzles.course.puzzle import Sizes, TileOnce, cdiv
from puzzles.running.errors import KernelError
from puzzles.running.recording import Access, Trace

MAX_TILES_NAMED = 6


def _z_stores(trace: Trace) -> list[Access]:
    return [a for a in trace.accesses if a.tensor == "z" and a.op != "load" and a.elements.size]


def _tile_of(elements: np.ndarray, columns: int, sizes: Sizes, contract: TileOnce) -> np.ndarray:
    """Each flat element of z as its tile's flat index (tile row × tiles per row + tile column)."""
    rows_block, cols_block = (sizes[name] for name in contract.block)
    tiles_n = cdiv(columns, cols_block)
    return (elements // columns // rows_block) * tiles_n + (elements % columns) // cols_block


def _tile_text(flat_tile: int, columns: int, sizes: Sizes, contract: TileOnce) -> str:
    tiles_n = cdiv(columns, sizes[contract.block[1]])
    return f"({flat_tile // tiles_n}, {flat_tile % tiles_n})"


def _tiles_text(tiles: list[int], columns: int, sizes: Sizes, contract: TileOnce) -> str:
    named = ", ".join(_tile_text(t, columns, sizes, contract) for t in tiles[:MAX_TILES_NAMED])
    return named + (", …" if len(tiles) > MAX_TILES_NAMED else "")


def tile_once_violation(trace: Trace, contract: TileOnce, sizes: Sizes, filename: str | None) -> KernelError | None:
    """The first tile of z that is stored more than once (by two programs, or twice by one), with the programs
    that stored it and how many tiles are stored more than once; None when every element is stored at most once."""
    shape = trace.tensors.get("z", ((),))[0]
    if len(shape) != 2:
        return None
    columns = shape[1]
    count = np.zeros(int(np.prod(shape)), dtype=np.int64)
    stores = _z_stores(trace)
    for access in stores:
        np.add.at(count, np.unique(access.elements), 1)
    twice = np.flatnonzero(count > 1)
    if not twice.size:
        return None
    doubled = np.unique(_tile_of(twice, columns, sizes, contract)).tolist()
    first_tile = doubled[0]
    storers = [a for a in stores if (_tile_of(a.elements, columns, sizes, contract) == first_tile).any()]
    programs = list(dict.fromkeys(a.program for a in storers))
    if len(programs) > 1:
        who = f"programs {', '.join(str(p) for p in programs[:4])}{', …' if len(programs) > 4 else ''} all store it"
    else:
        who = f"program {programs[0]} stores it {len(storers)} times"
    others = f" ({len(doubled)} tiles are stored more than once: {_tiles_text(doubled, columns, sizes, contract)})" \
        if len(doubled) > 1 else ""
    tile = _tile_text(first_tile, columns, sizes, contract)
    message = (f"tile {tile} of z (tile row, tile column) is computed more than once: {who}{others}. The values "
               f"are right, but the work is done again, and on a GPU the copies race: {contract.rule()}. Does the "
               "loop step by NUM_PROGRAMS, and start at the program's own id?")
    second = storers[1]
    return KernelError("tile computed twice", message, second.line,
                       linecache.getline(filename or "", second.line or 0), filename)


def never_stored_tiles_note(trace: Trace, contract: TileOnce, sizes: Sizes) -> str:
    """The tiles of z that no program stores any element of, named, and the tiles stored more than once beside
    them (a loop that starts at 0 gives every program tile 0 and leaves the others); '' when every tile is
    reached."""
    shape = trace.tensors.get("z", ((),))[0]
    if len(shape) != 2:
        return ""
    columns = shape[1]
    tiles = cdiv(shape[0], sizes[contract.block[0]]) * cdiv(columns, sizes[contract.block[1]])
    stored = np.zeros(tiles, dtype=np.int64)
    for access in _z_stores(trace):
        stored[np.unique(_tile_of(access.elements, columns, sizes, contract))] += 1
    never = np.flatnonzero(stored == 0).tolist()
    if not never:
        return ""
    again = np.flatnonzero(stored > 1).tolist()
    beside = (f", while {_tiles_text(again, columns, sizes, contract)} "
              f"{'are' if len(again) > 1 else 'is'} computed more than once") if again else ""
    return (f"no program stores tiles {_tiles_text(never, columns, sizes, contract)} of z (tile row, tile column; "
            f"{len(never)} of {tiles} tiles){beside}: {contract.rule()}")
