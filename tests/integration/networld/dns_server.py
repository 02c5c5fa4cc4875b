#!/usr/bin/env python3
"""dns_server.py: the test world's DNS server for made-up names (UDP only).

Usage: dns_server.py ADDR NAME=IP[,IP...] ...
Answers A questions for the names given (TTL 30), NXDOMAIN for others
(glue.test=PUBLIC,PRIVATE: a chain, AAAA and glue besides; see glue_answer),
and counts every question it sees in ADDR's log on stderr ("Q name").
Test code only: it runs in the test's own "internet" namespace.
"""
import socket
import struct
import sys


def parse_name(msg, off):
    labels = []
    while True:
        n = msg[off]
        if n == 0:
            return '.'.join(labels).lower(), off + 1
        labels.append(msg[off + 1:off + 1 + n].decode('ascii', 'replace'))
        off += 1 + n


def encode_name(name):
    return b''.join(bytes([len(p)]) + p.encode() for p in name.split('.')) + b'\0'


def rr(name, rtype, rdata, ttl=30):
    return encode_name(name) + struct.pack('!HHIH', rtype, 1, ttl, len(rdata)) + rdata


def glue_answer(qname, lan, public):
    """For glue.test, whatever the question: what a hostile or careless
    server sends besides the address asked for. A CNAME chain to
    alias.test, a public and a private A, a v4-mapped and a plain AAAA;
    an NS in authority; glue A and AAAA (private) in additional."""
    mapped = socket.inet_pton(socket.AF_INET6, '::ffff:' + lan)
    answers = [rr(qname, 5, encode_name('alias.test')), rr('alias.test', 1, socket.inet_aton(public)),
               rr('alias.test', 1, socket.inet_aton(lan)), rr('alias.test', 28, mapped),
               rr('alias.test', 28, socket.inet_pton(socket.AF_INET6, '2001:db8::1'))]
    authority = [rr(qname, 2, encode_name('ns.glue.test'))]
    additional = [rr('ns.glue.test', 1, socket.inet_aton(lan)), rr('ns.glue.test', 28, mapped)]
    return answers, authority, additional


def main():
    addr = sys.argv[1]
    table = {}
    for spec in sys.argv[2:]:
        name, ips = spec.split('=', 1)
        table[name.lower()] = ips.split(',')
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((addr, 53))
    print('ready', flush=True)
    while True:
        msg, peer = s.recvfrom(4096)
        if len(msg) < 12:
            continue
        qid, flags, qd = struct.unpack('!HHH', msg[:6])
        name, end = parse_name(msg, 12)
        qtype, qclass = struct.unpack('!HH', msg[end:end + 4])
        question = msg[12:end + 4]
        print('Q', name, qtype, file=sys.stderr, flush=True)
        ips = table.get(name)
        if name == 'glue.test' and 'glue.test' in table:
            an, ns, ar = glue_answer(name, table['glue.test'][1], table['glue.test'][0])
            head = struct.pack('!HHHHHH', qid, 0x8180, 1, len(an), len(ns), len(ar))
            s.sendto(head + question + b''.join(an + ns + ar), peer)
            continue
        answers = b''
        count = 0
        if ips and qtype == 1:
            for ip in ips:
                answers += b'\xc0\x0c' + struct.pack('!HHIH', 1, 1, 30, 4) + socket.inet_aton(ip)
                count += 1
        rcode = 0 if ips else 3
        head = struct.pack('!HHHHHH', qid, 0x8180 | rcode, 1, count, 0, 0)
        s.sendto(head + question + answers, peer)


if __name__ == '__main__':
    main()
