# SPDX-License-Identifier: Apache-2.0
"""A reader of ZooKeeper's transaction logs (<dataDir>/version-2/log.*), for the torture
checker: which run records each server logged, so that a tick whose record ZooKeeper accepted
and then lost (finding 18 in docs/reliability.md) is told from a tick leasekeeper lost.

The format (ZooKeeper 3.8, org.apache.zookeeper.server.persistence.FileTxnLog): a 16-byte
file header (magic "ZKLG", version, dbid), then records, each a big-endian 8-byte checksum,
a 4-byte length, that many bytes, and one end byte 'B'. A record is a TxnHeader (client id,
cxid, zxid, time, type: 32 bytes) and the transaction's body; a file ends at a zero length
(the rest is preallocated). Only the fields read here are parsed: the path and data of
creates (alone or inside a multi) and the paths of deletes and data sets. Everything is
bounded by the file's size; a record that does not parse or whose Adler-32 checksum does not
match ends the file's reading (a torn tail).
"""

import os
import re
import struct
import zlib

__all__ = ["read_log", "records_logged", "runs_logged"]

CREATES = (1, 15, 19, 21)  # create, create2, createContainer, createTTL
DELETE, DELETE_CONTAINER, SET_DATA, MULTI = 2, 20, 5, 14
ERROR, CLOSE_SESSION = -1, -11
HEADER = struct.Struct(">qiqqi")  # client id, cxid, zxid, time (ms), type


class _Torn(Exception):
    pass


def _buf(b, o, end):
    if o + 4 > end:
        raise _Torn()
    n = struct.unpack_from(">i", b, o)[0]
    o += 4
    if n < 0:
        return None, o
    if o + n > end:
        raise _Torn()
    return b[o:o + n], o + n


def _path(b, o, end):
    path, o = _buf(b, o, end)
    return (path or b"").decode("utf-8", "replace"), o


def _ops(typ, b, o, end, depth=0):
    """[(op, path, data)] of one transaction body: op "create", "set" or "delete"."""
    if typ in CREATES:
        path, o = _path(b, o, end)
        data, o = _buf(b, o, end)
        return [("create", path, data or b"")]
    if typ in (DELETE, DELETE_CONTAINER, SET_DATA):
        return [("set" if typ == SET_DATA else "delete", _path(b, o, end)[0], b"")]
    if typ == CLOSE_SESSION and o + 4 <= end:  # the session's ephemerals, deleted with it
        n = struct.unpack_from(">i", b, o)[0]
        o += 4
        if n < 0 or n > (end - o) // 4:
            raise _Torn()
        out = []
        for _ in range(n):
            path, o = _path(b, o, end)
            out.append(("delete", path, b""))
        return out
    if typ == MULTI and depth == 0:
        if o + 4 > end:
            raise _Torn()
        n = struct.unpack_from(">i", b, o)[0]
        o += 4
        if n < 0 or n > (end - o) // 8:
            raise _Torn()
        out, failed = [], False
        for _ in range(n):
            if o + 4 > end:
                raise _Torn()
            sub = struct.unpack_from(">i", b, o)[0]
            sb, o = _buf(b, o + 4, end)
            failed = failed or sub == ERROR
            if sb is not None:
                out += _ops(sub, sb, 0, len(sb), depth + 1)
        # A multi that failed is logged with the operations before the failing one as they
        # were, the rest as errors, and none of it applied: nothing happened.
        return [] if failed else out
    return []


def read_log(path):
    """Yield (zxid, time ms, [(op, path, data)]) for each transaction of one log file."""
    with open(path, "rb") as f:
        b = f.read()
    if len(b) < 16 or b[:4] != b"ZKLG":
        return
    o = 16
    while o + 12 <= len(b):
        crc, n = struct.unpack_from(">qi", b, o)
        o += 12
        if n <= 0 or o + n + 1 > len(b) or b[o + n:o + n + 1] != b"B":
            return
        rec = b[o:o + n]
        o += n + 1
        if zlib.adler32(rec) != crc & 0xFFFFFFFF or n < HEADER.size:
            return  # ZooKeeper's checksum is Adler-32: a torn or foreign tail
        _cid, _cxid, zxid, ms, typ = HEADER.unpack_from(rec, 0)
        try:
            ops = _ops(typ, rec, HEADER.size, n)
        except _Torn:
            return
        yield zxid, ms, ops


def _log_files(data_dir):
    d = os.path.join(data_dir, "version-2")
    try:
        names = os.listdir(d)
    except OSError:
        return []
    return sorted(os.path.join(d, x) for x in names if re.match(r"^log\.[0-9a-f]+$", x))


def records_logged(data_dirs, prefix):
    """What the servers logged under prefix (e.g. "/leasekeeper/jobs/"), for the checker:
    {path: {"creates": {(zxid, server, data, time ms)}, "deletes": {(zxid, server)}, "sets":
    {(zxid, server)}}}. data_dirs is {server name: its dataDir}. A transaction that a server
    logged twice (a log replayed into a new file) counts once per server."""
    out = {}
    for name, d in sorted(data_dirs.items()):
        for fn in _log_files(d):
            for zxid, ms, ops in read_log(fn):
                for op, path, data in ops:
                    if not path.startswith(prefix):
                        continue
                    e = out.setdefault(path, {"creates": set(), "deletes": set(),
                                              "sets": set()})
                    row = (zxid, name, data, ms) if op == "create" else (zxid, name)
                    e[{"create": "creates", "delete": "deletes", "set": "sets"}[op]].add(row)
    return out


def runs_logged(data_dirs, root="/leasekeeper"):
    """The run records the servers logged, for the checker's history ("runs_logged"):
    {job: [{"name": the record's node name, "zxid", "ms": the leader's time of the create,
    "tick", "outcome", "record": the record as written, "servers": [names whose logs hold
    this create], "deleted": a delete or a data set of the path logged after it (the record
    was changed on purpose: not ZooKeeper's loss), "shadowed": another create of the same
    path logged with no delete of it between the two (which a consistent ZooKeeper never
    logs: the second create of an existing node fails), the signature of finding 18}]}, only
    records whose data is a JSON object with an integer tick."""
    import json
    prefix = root + "/jobs/"
    out = {}
    for path, e in sorted(records_logged(data_dirs, prefix).items()):
        parts = path[len(prefix):].split("/")
        if len(parts) != 3 or parts[1] != "runs":
            continue
        by_zxid = {}
        for zxid, server, data, ms in e["creates"]:
            by_zxid.setdefault((zxid, data, ms), []).append(server)
        deletes = {z for z, _ in e["deletes"]}
        for (zxid, data, ms), servers in sorted(by_zxid.items()):
            try:
                r = json.loads(data.decode("utf-8"))
            except ValueError:
                continue
            if not isinstance(r, dict) or not isinstance(r.get("tick"), int):
                continue
            shadowed = any(z != zxid and not any(min(z, zxid) < d < max(z, zxid)
                                                 for d in deletes)
                           for z, _d, _m in by_zxid)
            out.setdefault(parts[0], []).append({
                "name": parts[2], "zxid": zxid, "ms": ms, "tick": r["tick"],
                "outcome": str(r.get("outcome", r.get("reason", ""))), "record": r,
                "servers": sorted(servers),
                "deleted": any(z > zxid for z, _ in e["deletes"] | e["sets"]),
                "shadowed": shadowed})
    return out
