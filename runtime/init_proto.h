/* init_proto.h: the control protocol between a sandbox's shim (outside) and
 * its init (pid 1 inside), over a SOCK_SEQPACKET socketpair.
 *
 * Each datagram is one JSON object (at most ABX_INIT_MSG_MAX bytes):
 *   shim -> init  {"op":"spawn","seq":N,"argv":[..],"env":["K=V",..],"cwd":"/app","uid":1000}
 *                 with SCM_RIGHTS fds [stdin, stdout, stderr] for the process
 *   init -> shim  {"op":"spawned","seq":N,"pid":P}   (pid inside the sandbox)
 *                 {"op":"spawned","seq":N,"code":8009,"message":"..."}
 *   shim -> init  {"op":"signal","pid":P,"sig":S}  (sent to P's process group)
 *   init -> shim  {"op":"exit","pid":P,"status":W}  (W: a wait status)
 *   shim -> init  {"op":"killall","seq":N}  every process but init is killed and reaped
 *   init -> shim  {"op":"killed","seq":N}
 * When the shim's end closes, init exits, which ends the pid namespace.
 */
#ifndef ABX_INIT_PROTO_H
#define ABX_INIT_PROTO_H

#define ABX_INIT_MSG_MAX (256 * 1024)

#endif
