// The peer socket's protocol, between a mount's daemon and the peer agent of a job
// (docs/PEERS.md). Shared by the daemon (fs/peer/peer_port.h) and the agent (tools/peer).
//
// JSON lines over a Unix stream socket, one request and one reply per line, the agent asking.
// A reply is {"ok": true, ...} or {"ok": false, "errno": N, "error": "..."}. A reply that carries
// a file descriptor says "fd": true; the descriptor comes with the reply's bytes (SCM_RIGHTS), so
// the agent takes descriptors in the order of such replies.
//
// Files are named by their number in the mount's plan (its layout's order, the same on every node
// of a job whose start-up checks passed), never by path: the agent needs no name of the dataset.
// Every request after "hello" names the plan it was numbered by ("plan": the id hello returned);
// if the mount's plan changed since, the request fails with ESTALE and the agent must stop.
//
//   hello   {protocol}                     -> node facts: manifest_digest, key_id, spec,
//                                             global_spec, world, first_rank, last_rank, layout,
//                                             layout_root, files, capacity, plan
//   attach  {plan, own: [file...], deadline_ms, hold_budget}
//                                          -> {held, held_bytes}: `own` are this node's home files
//                                             in the order to hold them; prefetches of other files
//                                             become wants (deadline_ms each)
//   wants   {plan, max}                    -> {wants: [{file, size}...]} (taken now)
//   fail    {plan, file}                   -> {}: not from a peer; staged from the PFS now
//   serve   {plan, file}                   -> "fd": the published copy, read-only, and
//                                             {size, digest, auth} (hex); ENOENT if not staged
//   receive {plan, file}                   -> "fd": a memory file of the listed size to fill
//   deliver {plan, file, digest, auth}     -> {}: the memory file is filled (checked and
//                                             published in the background)
//   abandon {plan, file}                   -> {}: the transfer is given up (staged from the PFS)
//   stage   {plan, file}                   -> {}: stage one of this node's home files now (a peer
//                                             asked for it)
//   report  {agent: {...}}                 -> {}: the agent's status, shown by `clairfs status`
//   progress {plan}                        -> {finished, epoch}
//   bye     {}                             -> {}: detach (closing the socket does the same)
#pragma once

#include <cstddef>

namespace clairfs {

constexpr int kPeerProtocolVersion = 1;
// Longest request line (an attach of a large node's home files).
constexpr size_t kMaxPeerRequestBytes = size_t{64} << 20;

}  // namespace clairfs
