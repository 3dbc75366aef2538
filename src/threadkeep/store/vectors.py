"""The embedded store's vector index: a derived file next to the database, memory-mapped.

SQLite stays the only source of truth; this file is a cache of it that can
always be thrown away and rebuilt. Each vector x is held as its offset from the
mean vector split in two: `along`, its component along the mean's direction
(a float), and the rest (the tail) as one sign bit per dimension after a fixed
random rotation (48 bytes for 384 dimensions), with the tail's scale; beside
them an int8 copy with its scale (388 bytes), and the fields filters read as
integer arrays (21 bytes): about 470 MB per million chunks, mapped in
milliseconds and read only where a query looks.

Why split off the mean's direction: text embeddings share a large common
direction (e5's vectors have cosine ~.85 with each other), so a query's
offset from the mean is mostly that direction, and plain sign bits of the
offset ranked a real query's true top 10 as far as a quarter of the store down
(benchmarks/vector_recall.py). With the common part scored exactly, the rest
is what sign bits estimate well once rotated (every rotated dimension carries
a share of the spread): its angle to the query's tail, from the Hamming
distance. Vectors fall into BUCKETS by their `along`, so a query's estimate of
q·x is a function of the bucket and the Hamming distance alone: a table of a
few thousand cells, and the scan stays integer work over the bits. A bit where
the query's rotated tail is large counts more (QUERY_LEVELS): on a million
vectors made from real e5 ones recall@10 went from .62 (format 1) to .95 with
plain Hamming distance and .984 with the weighted one, for about 10 ms more CPU
(benchmarks/README.md, "Stores at scale").

A query ranks every vector that passes its filters by that estimate, weighs
the tail bits of the best 10,000 by the query's rotated tail (`sign_scores`,
with `along` exact), scores the best 2,000 of those with their int8 copies,
and hands the best few dozen back for exact re-scoring with the float32
vectors in SQLite, so returned scores are always exact and a damaged file can
cost recall, never a wrong score.

Why a full scan of bits, and not a graph or clustered index: on 2 shared cores
an HNSW graph of 100k vectors took 185 s to build (usearch, i8, m 16), so a 1M
store would wait most of an hour for its first search; k-means inverted lists
built in seconds but had to scan 20% of the vectors for recall@10 of .94 on the
benchmark's vectors. Bits take new vectors by appending (with the mean,
rotation and buckets of the build), and a filter is just a mask over the same
positions.

Changes since the file was written are replayed from the store's change log
(the rowids it touched) into a small in-memory delta scanned exactly, plus a
tombstone mask; `fold` writes them into a new file once they grow.
"""

from __future__ import annotations

import json
import os
import uuid
import zlib
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from threadkeep.embed import cpu_cores
from threadkeep.errors import SidecarInvalid
from threadkeep.store.base import SearchFilters

MAGIC = b"THREADKEEP-VECTORS\n"
# 2: bits of the rotated tail, `along`, buckets. A file of another format is rebuilt from SQLite.
FORMAT = 2
# The mean, bucket edges and bucket levels are taken over the first vectors of a build; a file is
# rebuilt once the store has grown past this factor of the vectors they came from.
MEAN_SAMPLE = 65_536
# Vectors are grouped by their component along the mean's direction, in this many buckets of equal
# counts (in the build's sample).
BUCKETS = 16
ROTATION_SEED = 20_251_201
# A query's rotated tail components above their median count as strong: a disagreeing bit there adds
# 1 + extra to the distance, extra (at most MAX_EXTRA) from how much larger they are. 1: plain Hamming.
QUERY_LEVELS = 2
MAX_EXTRA = 3
REBUILD_GROWTH = 4
# The delta and tombstones are folded into a new file once either holds this many vectors.
FOLD_AT = 1_000
KINDS = ("chat", "document")


HAMMING_KEEP = 10_000
BITS_KEEP = 2_000


def hamming_candidates(k: int) -> int:
    """Best by the bucket-and-distance estimate kept for the signed-bit score (`sign_scores`), which
    costs about 0.5 ms for 5,000 and 4.8 for 20,000 (their bits are read from all over the file). On a
    million vectors made from real e5 ones, recall@10 was .976 keeping 5,000, .984 keeping 10,000
    (2.4 ms more CPU a query), .985 keeping 20,000 (5.5 more) (benchmarks/README.md, "Stores at scale")."""
    return max(HAMMING_KEEP, 100 * k)


def bit_candidates(k: int) -> int:
    """Best by signed-bit score kept for int8 scoring (about 0.6 ms for 2,000, 1.9 for 5,000)."""
    return max(BITS_KEEP, 40 * k)


# Up to this many vectors pass the filters, all are scored in int8 (about 3 ms) and the bits are
# skipped: sign bits rank poorly where many vectors are nearly as close as the nearest (on the test
# suite's 40-cluster vectors the top 10 by cosine ranked as far as 1,700th of 5,000 by Hamming
# distance, recall@10 .97 at 5,000 and .81 at 20,000 vectors), so a small store is searched exactly.
INT8_SCAN = 10_000
INT8_BLOCK = 4_096  # int8 rows converted at a time, so the float copy stays in the CPU cache


def rescore_count(k: int) -> int:
    """Best by int8 score re-scored exactly; int8 scores are within ~1e-3 of the exact cosine."""
    return 2 * k + 16


@dataclass
class Rows:
    """Vectors with the fields filters read, as SQLite hands them over."""

    rowids: np.ndarray  # int64
    kinds: np.ndarray  # uint8, index into KINDS
    refs: list[str]
    times: np.ndarray  # float64, occurred_ts
    vectors: np.ndarray  # float32 (n, dim)

    @classmethod
    def from_tuples(cls, rows: Sequence[tuple], dim: int) -> Rows:
        """(rowid, source_type, source_ref, occurred_ts, float32 blob) tuples."""
        vectors = np.empty((len(rows), dim), dtype=np.float32)
        for i, row in enumerate(rows):
            vectors[i] = np.frombuffer(row[4], dtype=np.float32)
        return cls(
            np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows)),
            np.fromiter((KINDS.index(row[1]) for row in rows), dtype=np.uint8, count=len(rows)),
            [row[2] for row in rows],
            np.fromiter((row[3] for row in rows), dtype=np.float64, count=len(rows)),
            vectors,
        )

    @classmethod
    def joined(cls, batches: Sequence[Rows], dim: int) -> Rows:
        if not batches:
            return cls(np.zeros(0, np.int64), np.zeros(0, np.uint8), [], np.zeros(0), np.zeros((0, dim), np.float32))
        return cls(
            np.concatenate([batch.rowids for batch in batches]),
            np.concatenate([batch.kinds for batch in batches]),
            [ref for batch in batches for ref in batch.refs],
            np.concatenate([batch.times for batch in batches]),
            np.vstack([batch.vectors for batch in batches]),
        )


def quantize(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 codes and one scale per vector (its largest component maps to 127)."""
    peak = np.abs(vectors).max(axis=1) if len(vectors) else np.zeros(0, np.float32)
    scales = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    return np.rint(vectors / scales[:, None]).astype(np.int8), scales


def pack_signs(positive: np.ndarray) -> np.ndarray:
    """(words, n) uint64 from an (n, dim) bool array: bit i of a vector is its column i."""
    n, dim = positive.shape
    padded = np.zeros((n, -(-dim // 64) * 64), dtype=bool)
    padded[:, :dim] = positive
    return np.ascontiguousarray(np.packbits(padded, axis=1, bitorder="little").view(np.uint64).T)


def rotation(dim: int) -> np.ndarray:
    """A fixed random orthogonal matrix (stored in the file, so a later numpy cannot change it)."""
    rng = np.random.default_rng(ROTATION_SEED)
    return np.linalg.qr(rng.standard_normal((dim, dim)))[0].astype(np.float32)


@dataclass
class Encoded:
    """What the file holds of each vector besides its int8 copy."""

    bits: np.ndarray  # (words, n) uint64: signs of the rotated tail
    along: np.ndarray  # (n,) float32: component of the offset from the mean along the mean's direction
    tail_scales: np.ndarray  # (n,) float32: |tail|^2 / |rotated tail|_1, what one signed bit stands for
    buckets: np.ndarray  # (n,) uint8: bucket of `along`

    @classmethod
    def joined(cls, parts: Sequence[Encoded], dim: int) -> Encoded:
        return cls(
            np.ascontiguousarray(np.hstack([np.zeros((-(-dim // 64), 0), np.uint64), *(e.bits for e in parts)])),
            np.concatenate([np.zeros(0, np.float32), *(e.along for e in parts)]),
            np.concatenate([np.zeros(0, np.float32), *(e.tail_scales for e in parts)]),
            np.concatenate([np.zeros(0, np.uint8), *(e.buckets for e in parts)]),
        )


@dataclass
class Frame:
    """What a build fixes from its first vectors, and every vector added later is encoded with."""

    mean: np.ndarray  # (dim,) float32
    rotation: np.ndarray  # (dim, dim) float32, orthogonal
    edges: np.ndarray  # (buckets - 1,) float32: where one bucket of `along` ends and the next begins
    levels: np.ndarray  # (2, buckets) float32: each bucket's mean `along` and mean tail scale

    @cached_property
    def axis(self) -> np.ndarray:
        """The mean's direction (zero for a zero mean: then the tail is the whole offset)."""
        norm = float(np.linalg.norm(self.mean))
        return (self.mean / norm if norm > 0 else np.zeros_like(self.mean)).astype(np.float32)

    def split(self, vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each vector's offset from the mean: its component along the mean's direction, and the rest."""
        offset = vectors - self.mean
        along = (offset @ self.axis).astype(np.float32)
        return along, offset - along[:, None] * self.axis

    def turn(self, tail: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Tails rotated, and what one signed bit of each stands for: |tail|^2 / |rotated tail|_1, so that
        the sum of a query's rotated tail signed by the bits, times it, estimates the tails' dot product."""
        turned = tail @ self.rotation.T
        spread = np.abs(turned).sum(axis=1)
        scales = np.divide(np.einsum("ij,ij->i", tail, tail), spread, out=np.zeros(len(tail)), where=spread > 0)
        return turned, scales.astype(np.float32)

    def encode(self, vectors: np.ndarray) -> Encoded:
        along, tail = self.split(vectors)
        turned, scales = self.turn(tail)
        return Encoded(pack_signs(turned > 0), along, scales, np.searchsorted(self.edges, along).astype(np.uint8))

    @classmethod
    def of(cls, sample: np.ndarray, dim: int) -> Frame:
        """The frame of the vectors in `sample` (the first of a build)."""
        mean = sample.mean(axis=0, dtype=np.float64) if len(sample) else np.zeros(dim)
        frame = cls(mean.astype(np.float32), rotation(dim), np.zeros(0, np.float32), np.zeros((2, 1), np.float32))
        along, tail = frame.split(sample)
        scales = frame.turn(tail)[1]
        if len(sample):
            frame.edges = np.quantile(along, np.linspace(0, 1, BUCKETS + 1)[1:-1]).astype(np.float32)
        else:
            frame.edges = np.zeros(BUCKETS - 1, np.float32)
        buckets = np.searchsorted(frame.edges, along)
        # A bucket the sample left empty (equal edges) is given the edge's value and the mean scale.
        levels = np.empty((2, BUCKETS), dtype=np.float32)
        levels[0] = np.concatenate([frame.edges[:1], frame.edges])
        levels[1] = scales.mean() if len(sample) else 0.0
        for bucket in np.unique(buckets):
            inside = buckets == bucket
            levels[:, bucket] = along[inside].mean(), scales[inside].mean()
        frame.levels = levels
        return frame


@dataclass
class Segment:
    """What the file holds; the bits are stored word by word (column-major) so a scan reads them in order."""

    rowids: np.ndarray
    kinds: np.ndarray
    ref_codes: np.ndarray  # int32 index into refs
    refs: list[str]
    times: np.ndarray
    bits: np.ndarray  # (words, n) uint64
    along: np.ndarray  # (n,) float32
    tail_scales: np.ndarray  # (n,) float32
    buckets: np.ndarray  # (n,) uint8
    codes: np.ndarray  # (n, dim) int8
    scales: np.ndarray  # (n,) float32
    mean: np.ndarray  # (dim,) float32
    rotation: np.ndarray  # (dim, dim) float32
    edges: np.ndarray  # (buckets - 1,) float32
    levels: np.ndarray  # (2, buckets) float32
    built_from: int  # vectors in the build that fixed the frame

    def __len__(self) -> int:
        return len(self.rowids)

    @cached_property
    def frame(self) -> Frame:
        return Frame(self.mean, self.rotation, self.edges, self.levels)


def build(batches: Iterable[Rows], dim: int) -> Segment:
    """A new segment over the rows of `batches`. Each batch is quantized as it comes; the frame comes from
    the first MEAN_SAMPLE vectors, which are the only float32 vectors held at once."""
    parts: list[Rows] = []
    quantized: list[tuple[np.ndarray, np.ndarray]] = []
    encoded: list[Encoded] = []
    held: list[np.ndarray] = []
    frame: Frame | None = None
    for batch in batches:
        parts.append(batch)
        quantized.append(quantize(batch.vectors))
        if frame is None:
            held.append(batch.vectors)
            if sum(map(len, held)) >= MEAN_SAMPLE:
                frame = Frame.of(np.vstack(held), dim)
                encoded.extend(frame.encode(vectors) for vectors in held)
                held = []
        else:
            encoded.append(frame.encode(batch.vectors))
        batch.vectors = batch.vectors[:0]  # the codes and bits are all that is kept
    if frame is None:
        frame = Frame.of(np.vstack([np.zeros((0, dim), np.float32), *held]), dim)
        encoded = [frame.encode(vectors) for vectors in held]
    code_of: dict[str, int] = {}
    joined = Encoded.joined(encoded, dim)
    return Segment(
        np.concatenate([np.zeros(0, np.int64), *(part.rowids for part in parts)]),
        np.concatenate([np.zeros(0, np.uint8), *(part.kinds for part in parts)]),
        np.fromiter((code_of.setdefault(ref, len(code_of)) for part in parts for ref in part.refs), dtype=np.int32),
        list(code_of),
        np.concatenate([np.zeros(0), *(part.times for part in parts)]),
        joined.bits, joined.along, joined.tail_scales, joined.buckets,
        np.vstack([np.zeros((0, dim), np.int8), *(codes for codes, _ in quantized)]),
        np.concatenate([np.zeros(0, np.float32), *(scales for _, scales in quantized)]),
        frame.mean, frame.rotation, frame.edges, frame.levels,
        sum(len(part.rowids) for part in parts),
    )  # fmt: skip


# --- the file ---------------------------------------------------------------------------------

ARRAYS = ("rowids", "kinds", "ref_codes", "times", "bits", "along", "tail_scales", "buckets", "codes", "scales",
          "mean", "rotation", "edges", "levels")  # fmt: skip
# Checked on every open, except the int8 codes: reading them all would cost most of the open time
# they save, and exact re-scoring keeps a damaged code from ever reaching a result.
UNCHECKED = ("codes",)


def _bytes(array: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(array).reshape(-1).view(np.uint8)


def save(segment: Segment, path: Path, identity: dict[str, object]) -> None:
    """Write atomically: a temporary file beside `path`, then rename over it."""
    arrays = {name: np.ascontiguousarray(getattr(segment, name)) for name in ARRAYS}
    layout, offset = {}, 0
    for name, array in arrays.items():
        layout[name] = {"offset": offset, "dtype": array.dtype.str, "shape": list(array.shape)}
        if name not in UNCHECKED:
            layout[name]["crc"] = zlib.crc32(_bytes(array))
        offset += -(-array.nbytes // 64) * 64
    header = json.dumps(
        {"format": FORMAT, **identity, "refs": segment.refs, "built_from": segment.built_from, "arrays": layout},
        ensure_ascii=False,
    ).encode()
    start = -(-(len(MAGIC) + 8 + len(header)) // 64) * 64
    temporary = path.with_name(f"{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        with open(temporary, "wb") as out:
            out.write(MAGIC + len(header).to_bytes(8, "little") + header)
            for name, array in arrays.items():
                out.seek(start + layout[name]["offset"])
                out.write(_bytes(array))
            out.truncate(start + offset)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def load(path: Path, identity: dict[str, object]) -> tuple[Segment, dict[str, object]]:
    """The segment in `path`, memory-mapped, and its header; SidecarInvalid unless it is whole and ours."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as source:
            head = source.read(len(MAGIC) + 8)
            if len(head) < len(MAGIC) + 8 or not head.startswith(MAGIC):
                raise SidecarInvalid(f"{path} is not a threadkeep vector file")
            header_size = int.from_bytes(head[len(MAGIC) :], "little")
            header = json.loads(source.read(header_size))
        if header.get("format") != FORMAT or any(header.get(key) != value for key, value in identity.items()):
            raise SidecarInvalid(f"{path} was written for another store, model or format")
        start = -(-(len(MAGIC) + 8 + header_size) // 64) * 64
        # A plain array over the mapping: np.memmap's own slicing costs microseconds in Python per call.
        mapped = np.memmap(path, dtype=np.uint8, mode="r").view(np.ndarray)
        arrays = {}
        for name in ARRAYS:
            spec = header["arrays"][name]
            dtype = np.dtype(spec["dtype"])
            nbytes = int(np.prod(spec["shape"])) * dtype.itemsize
            first = start + spec["offset"]
            if first + nbytes > size:
                raise SidecarInvalid(f"{path} is truncated")
            array = mapped[first : first + nbytes].view(dtype).reshape(spec["shape"])
            if name not in UNCHECKED and zlib.crc32(_bytes(array)) != spec["crc"]:
                raise SidecarInvalid(f"{path} is damaged ({name})")
            arrays[name] = array
        segment = Segment(
            arrays["rowids"], arrays["kinds"], arrays["ref_codes"], list(header["refs"]), arrays["times"],
            *(arrays[name] for name in ARRAYS[4:]), int(header["built_from"]),
        )  # fmt: skip
    except SidecarInvalid:
        raise
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise SidecarInvalid(f"{path} cannot be read: {error}") from error
    n, dim, buckets = len(segment.rowids), len(segment.mean), segment.levels.shape[-1]
    if not (
        len(segment.kinds) == len(segment.ref_codes) == len(segment.times) == segment.bits.shape[1] == n
        and len(segment.along) == len(segment.tail_scales) == len(segment.buckets) == len(segment.scales) == n
        and segment.codes.shape == (n, dim)
        and segment.rotation.shape == (dim, dim)
        and segment.levels.shape == (2, buckets)
        and segment.edges.shape == (buckets - 1,)
        and segment.bits.shape[0] * 64 >= dim
        and buckets * (64 * segment.bits.shape[0] * (1 + MAX_EXTRA) + 1) <= np.iinfo(np.uint16).max
    ):
        raise SidecarInvalid(f"{path} is inconsistent")
    return segment, header


# --- searching --------------------------------------------------------------------------------


def _filter_mask(kinds: np.ndarray, ref_match: np.ndarray | None, times: np.ndarray,
                 filters: SearchFilters) -> np.ndarray | None:  # fmt: skip
    mask = ref_match
    if filters.source_type:
        part = kinds == KINDS.index(filters.source_type)
        mask = part if mask is None else mask & part
    if filters.since:
        part = times >= filters.since.timestamp()
        mask = part if mask is None else mask & part
    if filters.until:
        part = times <= filters.until.timestamp()
        mask = part if mask is None else mask & part
    return mask


# Bits are compared block by block so the intermediate arrays stay in the CPU cache: one pass over
# the file's bits instead of several over a million-element array per 64-bit word (48 against
# 15 ms a query at 1M, measured on the shared 2-core machine).
BLOCK = 1 << 16
# A filter passing more than 1/GATHER_SHARE of the file is served by a full scan.
GATHER_SHARE = 3
# Distances sampled to bound the smallest ones (`_nearest`).
SAMPLE = 16_384
# Scans of at least this many vectors are split over two threads (`hamming`).
SPLIT_SCAN = 4 * BLOCK
_SCAN = ThreadPoolExecutor(max_workers=1, thread_name_prefix="threadkeep-scan")


def hamming(bits: np.ndarray, words: np.ndarray, positions: np.ndarray | None = None,
            cells: tuple[np.ndarray, np.ndarray] | None = None,
            strong: tuple[np.ndarray, int] | None = None) -> np.ndarray:  # fmt: skip
    """uint16 Hamming distances of the columns of `bits` (all, or those at `positions`) to `words`.
    With `strong` = (mask words, extra), a disagreeing bit the mask holds counts 1 + extra times.
    With `cells` = (base, rank), each distance d of column i becomes rank[base[i] + d] instead, in the
    same pass over the block (`VectorIndex._nearest_bits`).

    A long scan is split in two, the second half on a thread of its own: numpy lets go of the GIL
    inside each operation, so on two cores the halves run side by side."""
    size = bits.shape[1] if positions is None else len(positions)
    distance = np.empty(size, dtype=np.uint16)
    middle = size // 2 // BLOCK * BLOCK if size >= SPLIT_SCAN and cpu_cores() > 1 else size
    second = None
    if middle < size:
        second = _SCAN.submit(_hamming_part, bits, words, positions, cells, strong, distance, middle, size)
    try:
        _hamming_part(bits, words, positions, cells, strong, distance, 0, middle)
    finally:
        if second is not None:
            second.result()
    return distance


def _hamming_part(bits: np.ndarray, words: np.ndarray, positions: np.ndarray | None,
                  cells: tuple[np.ndarray, np.ndarray] | None, strong: tuple[np.ndarray, int] | None,
                  distance: np.ndarray, first: int, end: int) -> None:  # fmt: skip
    """`hamming` of the columns first to end, written into `distance`."""
    size = end - first
    if size <= 0:
        return
    flipped = np.empty(min(BLOCK, size), dtype=np.uint64)
    masked = np.empty(min(BLOCK, size) if strong else 0, dtype=np.uint64)
    ones = np.empty(min(BLOCK, size), dtype=np.uint8)
    weighted = np.empty(min(BLOCK, size) if strong else 0, dtype=np.uint16)
    for start in range(first, end, BLOCK):
        stop = min(start + BLOCK, end)
        out, xor, count = distance[start:stop], flipped[: stop - start], ones[: stop - start]
        part = None if positions is None else positions[start:stop]
        for word in range(len(words)):
            column = bits[word, start:stop] if part is None else bits[word][part]
            np.bitwise_xor(column, words[word], out=xor)
            np.bitwise_count(xor, out=count)
            if word == 0:
                out[:] = count
            else:
                np.add(out, count, out=out)
            if strong is not None:
                more = weighted[: stop - start]
                np.bitwise_and(xor, strong[0][word], out=masked[: stop - start])
                np.bitwise_count(masked[: stop - start], out=count)
                if word == 0:
                    more[:] = count
                else:
                    np.add(more, count, out=more)
        if strong is not None:
            np.multiply(more, strong[1], out=more)
            np.add(out, more, out=out)
        if cells is not None:
            base, rank = cells
            np.add(out, base[start:stop] if part is None else base[part], out=out)
            # In place and unchecked: every base + distance is a cell of the table (`_cells_per_bucket`).
            np.take(rank, out, out=out, mode="clip")


def _nearest(distance: np.ndarray, count: int) -> np.ndarray:
    """Indexes of `count` smallest distances: all below the count-th smallest value, then the first
    ties at it. The distances are small integers (uint16), so that value comes from their histogram
    (1.1 ms at 1M against 3.7 for np.partition, 4x that for argpartition); the histogram is of the
    distances at most a bound read off a sample (twice the share asked for), which hold that value
    whenever they are at least `count` (else of them all): 3.1 -> 1.5 ms at 1M, the same indexes."""
    if count >= len(distance):
        return np.arange(len(distance))
    sample = distance[:: max(1, len(distance) // SAMPLE)].copy()
    rank = min(len(sample) - 1, 2 * count * len(sample) // len(distance) + 16)
    within = np.flatnonzero(distance <= np.partition(sample, rank)[rank])
    if len(within) >= count:
        values = distance[within]
    else:  # the sample misjudged the bound: all of them
        within, values = np.arange(len(distance)), distance
    threshold = int(np.searchsorted(np.cumsum(np.bincount(values)), count))
    if len(within) > count:
        kept = values <= threshold
        within, values = within[kept], values[kept]
    if len(within) == count:
        return within
    below = within[values < threshold]
    return np.concatenate([below, within[values == threshold][: count - len(below)]])


# Row b: the signs (+1 / -1) of the 8 dimensions whose bits byte value b holds (bit t: dimension t).
BYTE_SIGNS = (((np.arange(256)[:, None] >> np.arange(8)) & 1) * 2 - 1).astype(np.float32)


def sign_scores(bits: np.ndarray, positions: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """For the columns of `bits` at `positions`: the sum over dimensions of `weights` signed by each
    vector's bit (+ set, - clear). With the query's rotated tail as weights, times the vector's
    tail scale, this estimates the dot product of the two tails, and ranks the true neighbours
    higher than the Hamming distance does, which counts every disagreeing bit alike however small
    the query's component. A table per byte: 48 lookups a vector for 384 dimensions.

    The lookups go byte by byte over all the vectors, so every array made is a vector's worth of
    floats (40 kB for 10,000): one array of all the lookups (4 MB of indexes, 2 MB of floats) was
    fresh memory from the system every query, and its page faults doubled the stage's time."""
    table = weights.reshape(-1, 8) @ BYTE_SIGNS.T  # (bytes, 256)
    codes = np.ascontiguousarray(bits[:, positions].T).view(np.uint8)  # (len(positions), bytes), little-endian
    terms = len(table)
    if terms > 128:  # one array after all (no such model in use)
        return np.take(table.reshape(-1), codes + np.arange(0, table.size, 256)).sum(axis=1)

    def term(byte: int) -> np.ndarray:
        return np.take(table[byte], codes[:, byte])

    # In the order numpy sums a row of up to 128 terms (8 running sums, then added pairwise), so the
    # scores are those of summing each vector's lookups as a row.
    sums = [term(byte) for byte in range(min(8, terms))]
    if terms < 8:
        return np.sum(sums, axis=0, dtype=np.float32) if sums else np.zeros(len(positions), np.float32)
    whole = terms - terms % 8
    for start in range(8, whole, 8):
        for lane in range(8):
            np.add(sums[lane], term(start + lane), out=sums[lane])
    total = ((sums[0] + sums[1]) + (sums[2] + sums[3])) + ((sums[4] + sums[5]) + (sums[6] + sums[7]))
    for byte in range(whole, terms):
        total += term(byte)
    return total


def _smallest(values: np.ndarray, count: int) -> np.ndarray:
    if count >= len(values):
        return np.arange(len(values))
    return np.argpartition(values, count - 1)[:count]


class VectorIndex:
    """A file segment plus what changed since: tombstoned file rows and an exact in-memory delta."""

    def __init__(self, segment: Segment, seq: int) -> None:
        self.segment = segment
        self.seq = seq
        self.dead = np.zeros(len(segment), dtype=bool)
        self.dead_count = 0
        self._sorted: np.ndarray | None = None
        self._code_of = {ref: i for i, ref in enumerate(segment.refs)}
        self.delta: dict[int, tuple[int, str, float, np.ndarray]] = {}
        self._delta_rows: Rows | None = None

    def __len__(self) -> int:
        return len(self.segment) - self.dead_count + len(self.delta)

    @property
    def pending(self) -> int:
        """Changes not yet in the file."""
        return self.dead_count + len(self.delta)

    @property
    def outgrown(self) -> bool:
        """The store has grown so far past the file's mean that a rebuild from SQLite should fix a new one."""
        return len(self) > REBUILD_GROWTH * max(self.segment.built_from, MEAN_SAMPLE // REBUILD_GROWTH)

    def apply(self, touched: Iterable[int], current: Rows, seq: int) -> None:
        """Replay the log: every touched rowid is dropped, then re-added as it is now (`current`)."""
        touched = np.fromiter(touched, dtype=np.int64)
        if self._sorted is None:
            self._sorted = np.argsort(self.segment.rowids, kind="stable")
        ordered = self.segment.rowids[self._sorted]
        at = np.minimum(np.searchsorted(ordered, touched), max(len(ordered) - 1, 0))
        if len(ordered):
            self.dead[self._sorted[at[ordered[at] == touched]]] = True
        self.dead_count = int(np.count_nonzero(self.dead))
        for rowid in touched.tolist():
            self.delta.pop(rowid, None)
        for i, rowid in enumerate(current.rowids.tolist()):
            self.delta[rowid] = (int(current.kinds[i]), current.refs[i], float(current.times[i]), current.vectors[i])
        self._delta_rows = None
        self.seq = seq

    def _delta(self) -> Rows:
        if self._delta_rows is None:
            items = list(self.delta.values())
            dim = len(self.segment.mean)
            self._delta_rows = Rows(
                np.fromiter(self.delta, dtype=np.int64, count=len(items)),
                np.array([item[0] for item in items], dtype=np.uint8),
                [item[1] for item in items],
                np.array([item[2] for item in items], dtype=np.float64),
                np.array([item[3] for item in items], dtype=np.float32).reshape(len(items), dim),
            )
        return self._delta_rows

    def fold(self) -> Segment:
        """One segment holding everything: the live file rows, then the delta."""
        segment, live = self.segment, np.flatnonzero(~self.dead)
        delta = self._delta()
        refs, code_of = list(segment.refs), dict(self._code_of)
        for ref in delta.refs:
            if ref not in code_of:
                code_of[ref] = len(refs)
                refs.append(ref)
        ref_codes = np.concatenate(
            [segment.ref_codes[live], np.fromiter((code_of[ref] for ref in delta.refs), np.int32, len(delta.refs))]
        )
        used, compact = np.unique(ref_codes, return_inverse=True)
        delta_codes, delta_scales = quantize(delta.vectors)
        added = segment.frame.encode(delta.vectors)
        return Segment(
            np.concatenate([segment.rowids[live], delta.rowids]),
            np.concatenate([segment.kinds[live], delta.kinds]),
            compact.astype(np.int32),
            [refs[i] for i in used],
            np.concatenate([segment.times[live], delta.times]),
            np.ascontiguousarray(np.hstack([segment.bits[:, live], added.bits])),
            np.concatenate([segment.along[live], added.along]),
            np.concatenate([segment.tail_scales[live], added.tail_scales]),
            np.concatenate([segment.buckets[live], added.buckets]),
            np.vstack([segment.codes[live], delta_codes]),
            np.concatenate([segment.scales[live], delta_scales]),
            *(np.asarray(array) for array in (segment.mean, segment.rotation, segment.edges, segment.levels)),
            segment.built_from,
        )

    def candidates(self, query: np.ndarray, k: int, filters: SearchFilters) -> list[int]:
        """Rowids of the vectors passing `filters` to re-score exactly for a top-k, from the file and the delta."""
        query = np.asarray(query, dtype=np.float32)
        count = rescore_count(k)
        return [*self._from_file(query, k, filters), *self._from_delta(query, count, filters)]

    def _from_file(self, query: np.ndarray, k: int, filters: SearchFilters) -> list[int]:
        segment = self.segment
        n = len(segment)
        if n == 0:
            return []
        ref_match = None
        if filters.conversation:
            code = self._code_of.get(filters.conversation)
            if code is None:
                return []
            ref_match = segment.ref_codes == code
        mask = _filter_mask(segment.kinds, ref_match, segment.times, filters)
        if self.dead_count:
            mask = ~self.dead if mask is None else mask & ~self.dead
        if mask is None:
            positions = None
        else:
            positions = np.flatnonzero(mask)
            if len(positions) == 0:
                return []
        size = n if positions is None else len(positions)
        if size > INT8_SCAN:
            positions = self._nearest_bits(query, positions, k)
        elif positions is None:
            positions = np.arange(n)
        positions = np.sort(positions)  # in file order: the int8 rows are read front to back
        scores = np.empty(len(positions), dtype=np.float32)
        for start in range(0, len(positions), INT8_BLOCK):
            part = positions[start : start + INT8_BLOCK]
            scores[start : start + len(part)] = segment.codes[part].astype(np.float32) @ query
        scores *= segment.scales[positions]
        best = positions[_smallest(-scores, rescore_count(k))]
        return segment.rowids[best].tolist()

    def _nearest_bits(self, query: np.ndarray, positions: np.ndarray | None, k: int) -> np.ndarray:
        """File positions (all, or among `positions`) of the `bit_candidates(k)` best by signed-bit score,
        among the `hamming_candidates(k)` best by the estimate from bucket and (weighted) Hamming distance."""
        segment, frame = self.segment, self.segment.frame
        along = float(query @ frame.axis)
        turned = frame.rotation @ (query - along * frame.axis)
        words = pack_signs(turned[None, :] > 0)[:, 0]
        magnitude = np.abs(turned)
        strong, unit = None, float(magnitude.mean())
        if QUERY_LEVELS == 2 and magnitude.any():
            high = magnitude > np.median(magnitude)
            unit = float(magnitude[~high].mean())
            extra = int(np.clip(round(float(magnitude[high].mean()) / max(unit, 1e-12)) - 1, 0, MAX_EXTRA))
            strong = (pack_signs(high[None, :])[:, 0], extra) if extra else None
        cells = (self._cell_base, self._cell_rank(along, float(magnitude.sum()), unit, len(words)))
        if positions is not None and len(positions) > len(segment) // GATHER_SHARE:
            # Gathering most of the file word by word costs more than scanning it all.
            distance = hamming(segment.bits, words, cells=cells, strong=strong)[positions]
        else:
            distance = hamming(segment.bits, words, positions, cells, strong)
        nearest = _nearest(distance, hamming_candidates(k))
        found = nearest if positions is None else positions[nearest]
        weights = np.zeros(64 * len(words), dtype=np.float32)
        weights[: len(turned)] = turned
        scores = along * segment.along[found] + segment.tail_scales[found] * sign_scores(segment.bits, found, weights)
        return found[_smallest(-scores, bit_candidates(k))]

    def _cell_rank(self, along: float, spread: float, unit: float, words: int) -> np.ndarray:
        """For each (bucket, distance) cell, how far its estimated dot product with the query falls below the
        best cell's, in 65,535ths of the table's range (so `_nearest` ranks by it from a histogram; sorting
        the cells cost 2 ms a query). The estimate: the bucket's mean `along` times the query's, plus its
        mean tail scale times the query's rotated tail signed by the vector's bits, which is the tail's
        absolute sum `spread` less twice what the disagreeing bits weigh, about `unit` a step of distance."""
        levels = self.segment.levels
        distances = np.arange(self._cells_per_bucket, dtype=np.float64)
        estimate = along * levels[0][:, None] + levels[1][:, None] * (spread - 2 * unit * distances)[None, :]
        best, worst = float(estimate.max()), float(estimate.min())
        step = (best - worst) / np.iinfo(np.uint16).max if best > worst else 1.0
        return np.rint((best - estimate.reshape(-1)) / step).astype(np.uint16)

    @cached_property
    def _cells_per_bucket(self) -> int:
        """Distances a vector can have: up to (1 + MAX_EXTRA) per bit."""
        return 64 * self.segment.bits.shape[0] * (1 + MAX_EXTRA) + 1

    @cached_property
    def _cell_base(self) -> np.ndarray:
        """Each file vector's first cell: its bucket times the cells of a bucket."""
        return self.segment.buckets.astype(np.uint16) * np.uint16(self._cells_per_bucket)

    def _from_delta(self, query: np.ndarray, count: int, filters: SearchFilters) -> list[int]:
        if not self.delta:
            return []
        rows = self._delta()
        ref_match = None
        if filters.conversation:
            ref_match = np.array([ref == filters.conversation for ref in rows.refs], dtype=bool)
        mask = _filter_mask(rows.kinds, ref_match, rows.times, filters)
        scores = rows.vectors @ query
        if mask is not None:
            scores = np.where(mask, scores, -np.inf)
        return [int(rows.rowids[i]) for i in _smallest(-scores, count) if np.isfinite(scores[i])]
