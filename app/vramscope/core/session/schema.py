"""The session file format: one SQLite database in WAL mode.

Why SQLite/WAL: a committed transaction survives a SIGKILL of the writer
(the WAL is replayed on the next open), the session is one file (plus the
transient -wal/-shm while it is written), and any SQLite tool can read it.

Layout (times are Unix seconds, memory is bytes, None is "not available"):

- ``schema_version``  one row: the format version of this file.
- ``meta``            key/value (JSON values): host, source, simulated, interval, ...
- ``gpus``            static facts per GPU index (name, uuid, PCI bus id, vendor,
                      memory kind: "unified" for a board sharing system memory) and,
                      for a GPU of another machine (--host, a fleet), its host
                      and its index there; files written before those two
                      columns existed read as this machine's GPUs (or from the
                      ``hosts`` meta, see ``gpu_host``).
- ``frames``          one row per sampling pass (its time, source, error).
- ``gpu_samples``     one row per pass and GPU.
- ``processes``       process identities, deduplicated by (host, pid, start
                      time), with the container (JSON: runtime, id, name,
                      pod_uid, pod, namespace), the PID inside its namespace
                      and the host it runs on (None: this machine); files
                      written before those columns existed read as None.
- ``proc_samples``    one row per pass and GPU with the processes on it as
                      little-endian arrays of equal length ``n``:
                      ``ids`` int32 (processes.id), ``used`` int64 bytes,
                      ``sm`` int16 %, ``flags`` uint8 (bit 0 compute,
                      bit 1 graphics, bit 2 has_agent); -1 in ``used``/``sm``
                      is "not available". Arrays rather than one row per
                      process keep a day of 8 GPUs x 50 processes readable
                      in seconds instead of minutes.
- ``gpu_rollup`` / ``proc_rollup``  peaks per 10 s bucket (same layout),
                      written as buckets close; reopening a long session
                      reads these instead of every sample.
- ``agent_samples``   PyTorch allocator figures and buckets per agent device.
- ``agent_info``      per agent process: host, ranks, allocator settings.
- ``events``          agent events (steps, OOMs, ...), data as JSON.
- ``alerts``, ``actions``  diagnostics raised and actions taken, detail as JSON.
- ``mig_slices``, ``mig_samples``, ``mig_procs``  MIG slices (core/session/mig_rows.py).
"""

from __future__ import annotations

import sys
from array import array

from vramscope.agent.protocol import ALLOCATOR_FIGURES
from vramscope.core.status import json_text

SCHEMA_VERSION = 1
_LITTLE = sys.byteorder == "little"
ROLLUP_STEP = 10.0  # seconds; matches Store's default coarse tier
APPLICATION_ID = 0x76534331  # "vSC1" in the SQLite header: identifies our files

GPU_COLUMNS = (
    "used",
    "total",
    "free",
    "reserved",
    "util_gpu",
    "util_memory",
    "temperature",
    "power_w",
    "power_limit_w",
)
ROLLUP_GPU_COLUMNS = ("used", "total", "reserved", "util_gpu", "temperature", "power_w")
AGENT_COLUMNS = ALLOCATOR_FIGURES
BUCKET_COLUMNS = (
    "weights",
    "gradients",
    "optimizer_state",
    "other_allocated",
    "cached_free",
    "outside_pytorch",
)

FLAG_COMPUTE, FLAG_GRAPHICS, FLAG_AGENT = 1, 2, 4
# processes columns added after format 1 was first written (older files lack them)
PROCESS_FACTS = ("user", "name", "command", "ppid", "container", "ns_pid")
# where a GPU is (gpus) and a process runs (processes, "host" only): added later too
GPU_PLACE = ("host", "host_index")
# what kind of GPU it is (GpuSample.vendor, .memory_kind): added later; older files read None
GPU_KIND = ("vendor", "memory_kind")

DDL = f"""
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL, app_version TEXT,
    created REAL);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS gpus (gpu INTEGER PRIMARY KEY, name TEXT, uuid TEXT,
    pci_bus_id TEXT, host TEXT, host_index INTEGER, vendor TEXT, memory_kind TEXT);
CREATE TABLE IF NOT EXISTS frames (t REAL PRIMARY KEY, source TEXT, simulated INTEGER,
    error TEXT, driver_version TEXT, nvml_version TEXT, cuda_driver_version TEXT)
    WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS gpu_samples (t REAL NOT NULL, gpu INTEGER NOT NULL,
    {", ".join(GPU_COLUMNS)}, error TEXT, PRIMARY KEY (t, gpu)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS processes (id INTEGER PRIMARY KEY, pid INTEGER NOT NULL,
    start_time REAL, user TEXT, name TEXT, command TEXT, ppid INTEGER, first_seen REAL,
    container TEXT, ns_pid INTEGER, host TEXT);
CREATE TABLE IF NOT EXISTS proc_samples (t REAL NOT NULL, gpu INTEGER NOT NULL,
    n INTEGER NOT NULL, ids BLOB, used BLOB, sm BLOB, flags BLOB,
    PRIMARY KEY (t, gpu)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS gpu_rollup (t REAL NOT NULL, gpu INTEGER NOT NULL,
    {", ".join(ROLLUP_GPU_COLUMNS)}, PRIMARY KEY (t, gpu)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS proc_rollup (t REAL NOT NULL, gpu INTEGER NOT NULL,
    n INTEGER NOT NULL, ids BLOB, used BLOB, PRIMARY KEY (t, gpu)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS agent_samples (t REAL NOT NULL, proc INTEGER NOT NULL,
    device TEXT NOT NULL, gpu_uuid TEXT, step INTEGER,
    {", ".join(AGENT_COLUMNS)}, {", ".join(BUCKET_COLUMNS)},
    PRIMARY KEY (t, proc, device)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS agent_info (proc INTEGER PRIMARY KEY, hostname TEXT,
    rank INTEGER, local_rank INTEGER, world_size INTEGER, allocator_settings TEXT);
CREATE TABLE IF NOT EXISTS events (id INTEGER PRIMARY KEY, t REAL NOT NULL, proc INTEGER,
    kind TEXT NOT NULL, data TEXT);
CREATE INDEX IF NOT EXISTS events_t ON events (t);
CREATE TABLE IF NOT EXISTS alerts (id INTEGER PRIMARY KEY, t REAL NOT NULL, kind TEXT NOT NULL,
    severity TEXT, gpu INTEGER, proc INTEGER, title TEXT, detail TEXT);
CREATE TABLE IF NOT EXISTS actions (id INTEGER PRIMARY KEY, t REAL NOT NULL,
    action TEXT NOT NULL, proc INTEGER, pid INTEGER, start_time REAL, result TEXT,
    detail TEXT);
"""

SUFFIX = ".vramscope"

# meta of a recording of other machines (`--host`): the hosts in order, and
# how many GPU indices each has (GPU i of the n-th host is n * block + i);
# what the reader falls back on for files whose gpus table has no host column
META_HOSTS = "hosts"
META_HOST_GPU_BLOCK = "host_gpu_block"


def gpu_host(meta: dict, index: int) -> dict:
    """{"host", "host_index"} of GPU ``index`` in a recording of other machines, else {}."""
    hosts, block = meta.get(META_HOSTS), meta.get(META_HOST_GPU_BLOCK)
    if not isinstance(hosts, list) or not isinstance(block, int) or block <= 0:
        return {}
    n = index // block
    return {"host": str(hosts[n]), "host_index": index % block} if 0 <= n < len(hosts) else {}


def array_blob(typecode: str, values) -> bytes:
    """``values`` as the little-endian array a blob column holds (``typecode``: array's)."""
    a = array(typecode, values)
    if not _LITTLE:
        a.byteswap()
    return a.tobytes()


def json_column(value) -> str | None:
    """``value`` as the JSON text a column holds (None stays NULL)."""
    if value is None:
        return None
    return json_text.dumps(value, sort_keys=True)  # NaN/Inf as null: every reader parses it


def present(have: set[str], names) -> str:
    """The SELECT list for ``names``: NULL for a column this file lacks (it was
    written before the column was added)."""
    return ", ".join(c if c in have else "NULL" for c in names)
