#!/usr/bin/env python3
"""Hostile traces for bench/reader_memory.sh: small gzip files that would make a careless
reader hold gigabytes or work for hours. Each is written streaming, so making them takes
little memory.

    make_hostile_traces.py OUT_DIR BASE_PFTRACE_GZ

BASE_PFTRACE_GZ: a small .pftrace.gz kinetrace wrote (gzip over plain packets), whose header,
event sequence and footer the .pftrace cases keep, their own packets put before the footer.
"""
import gzip
import os
import sys
import zlib

MB = 1 << 20


def json_case(path, write):
    with gzip.open(path, "wt", compresslevel=6) as out:
        write(out)


def metadata(out):
    # 700 top-level values of 3 MB each: 2.1 GB of metadata.
    out.write("{")
    for i in range(700):
        out.write(f'"meta{i}": "{i:08d}' + "x" * (3 * MB) + '",\n')
    out.write('"traceEvents": []}\n')


def names(out):
    # 1,500 kernels, each of its own 1 MB name: 1.5 GB of distinct names.
    out.write('{"traceEvents": [\n')
    for i in range(1500):
        name = f"{i:06d}" + "k" * MB
        sep = "," if i else ""
        out.write(f'{sep}{{"ph":"X","cat":"kernel","name":"{name}","pid":0,"tid":7,'
                  f'"ts":{i * 10},"dur":5,"args":{{"device":0,"stream":7}}}}\n')
    out.write("]}\n")


def steps(out):
    # 5 million step ranges.
    out.write('{"traceEvents": [\n')
    chunk = []
    for i in range(5_000_000):
        sep = "," if i else ""
        chunk.append(f'{sep}{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{i}",'
                     f'"pid":1,"tid":1,"ts":{i * 10},"dur":9}}\n')
        if len(chunk) == 10_000:
            out.write("".join(chunk))
            chunk = []
    out.write("".join(chunk))
    out.write("]}\n")


def collectives(out):
    # A rank of 2 million NCCL collectives, each in a process of its own: what merge
    # remembers per collective and per process.
    out.write('{"distributedInfo": {"rank": 0}, "traceEvents": [\n')
    chunk = []
    for i in range(2_000_000):
        sep = "," if i else ""
        chunk.append(f'{sep}{{"ph":"X","cat":"kernel",'
                     f'"name":"ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",'
                     f'"pid":{i},"tid":7,"ts":{i * 10},"dur":5,"args":{{"device":0,"stream":7}}}}\n')
        if len(chunk) == 10_000:
            out.write("".join(chunk))
            chunk = []
    out.write("".join(chunk))
    out.write("]}\n")


def threads(out):
    # 2 million slices, each on a thread of its own: the tracks a .pftrace writer keeps.
    out.write('{"traceEvents": [\n')
    chunk = []
    for i in range(2_000_000):
        sep = "," if i else ""
        chunk.append(f'{sep}{{"ph":"X","name":"s","pid":1,"tid":{i},"ts":{i * 10},"dur":5}}\n')
        if len(chunk) == 10_000:
            out.write("".join(chunk))
            chunk = []
    out.write("".join(chunk))
    out.write("]}\n")


# ---- .pftrace ----

def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def field_varint(number, v):
    return varint(number << 3) + varint(v)


def field_bytes(number, data):
    return varint((number << 3) | 2) + varint(len(data)) + data


def packet(body):
    return field_bytes(1, body)  # Trace.packet


def packets_of(data):
    """(start, end) of each framed packet of a Trace message."""
    at = 0
    spans = []
    while at < len(data):
        start = at
        key, at = read_varint(data, at)
        length, at = read_varint(data, at)
        at += length
        spans.append((start, at))
    return spans


def read_varint(data, at):
    value = shift = 0
    while True:
        b = data[at]
        at += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, at


SEQUENCE = 4242
TRACK = 77_000_000


def thread_track():
    descriptor = field_varint(1, TRACK) + field_bytes(4, field_varint(1, 1) + field_varint(2, 1))
    return packet(field_varint(10, SEQUENCE) + field_bytes(60, descriptor))


def interned(count):
    # 2,000 packets of 1,000 interned names of 1 KB: 2 GB of interned strings.
    for p in range(count):
        entries = b"".join(
            field_bytes(2, field_varint(1, p * 1000 + i + 1) +
                        field_bytes(2, f"{p:06d}{i:06d}".encode() + b"n" * 1024))
            for i in range(1000))
        yield packet(field_varint(10, SEQUENCE) + field_bytes(12, entries))


def tracks(count):
    # A million thread tracks with 400-byte names.
    for i in range(count):
        descriptor = (field_varint(1, TRACK + 1 + i) + field_bytes(2, f"{i:09d}".encode() + b"t" * 400) +
                      field_bytes(4, field_varint(1, 2) + field_varint(2, i)))
        yield packet(field_varint(10, SEQUENCE) + field_bytes(60, descriptor))


def open_slices(count):
    # A million slices begun and never ended, with 2 KB names: 2 GB of open slices.
    yield thread_track()
    for i in range(count):
        event = (field_varint(9, 1) + field_varint(11, TRACK) +
                 field_bytes(23, f"{i:09d}".encode() + b"s" * 2048))
        yield packet(field_varint(10, SEQUENCE) + field_varint(8, 1_000_000 + i) +
                     field_varint(58, 6) + field_bytes(11, event))


def nested(levels=4):
    # compressed_packets holding 8 MB of copies of a compressed_packets packet, nested: each
    # level inflates the one inside over again, so the work multiplies with the depth.
    inner = packet(field_varint(10, SEQUENCE))
    for _ in range(levels):
        copies = max(1, 8 * MB // len(inner))
        inner = packet(field_bytes(50, zlib.compress(inner * copies, 9)))
    yield inner


def pftrace_case(base, path, packets):
    with gzip.open(base, "rb") as f:
        data = f.read()
    footer_start, _ = packets_of(data)[-1]
    with gzip.open(path, "wb", compresslevel=6) as out:
        out.write(data[:footer_start])
        for p in packets:
            out.write(p)
        out.write(data[footer_start:])


def main():
    out_dir, base = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    cases = {
        "metadata.json.gz": lambda p: json_case(p, metadata),
        "names.json.gz": lambda p: json_case(p, names),
        "steps.json.gz": lambda p: json_case(p, steps),
        "collectives.json.gz": lambda p: json_case(p, collectives),
        "threads.json.gz": lambda p: json_case(p, threads),
        "interned.pftrace.gz": lambda p: pftrace_case(base, p, interned(2000)),
        "tracks.pftrace.gz": lambda p: pftrace_case(base, p, tracks(1_000_000)),
        "open-slices.pftrace.gz": lambda p: pftrace_case(base, p, open_slices(1_000_000)),
        "nested.pftrace.gz": lambda p: pftrace_case(base, p, nested()),
    }
    only = sys.argv[3:]
    for name, make in cases.items():
        path = os.path.join(out_dir, name)
        if (only and name not in only) or os.path.exists(path):
            continue
        make(path)
        print(f"{name}: {os.path.getsize(path) / MB:.1f} MB", file=sys.stderr)


if __name__ == "__main__":
    main()
