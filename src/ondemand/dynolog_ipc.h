#pragma once

#include <sys/socket.h>
#include <sys/un.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "support/result.h"

// The local protocol of Meta's dynolog daemon, as libkineto speaks it: what a traced process
// sends to ask for an on-demand trace configuration, and what comes back.
//
//   transport  Unix datagram sockets, every send and receive MSG_DONTWAIT. The daemon is
//              named "dynolog", a client "dynoconfigclient<random hex>". Names are abstract
//              by default (sun_path = NUL + name + NUL, the trailing NUL part of the name);
//              with KINETO_IPC_SOCKET_DIR=DIR both sides use filesystem sockets DIR/NAME.
//   datagram   a 40-byte header {uint64 size; char type[32];} (type NUL-padded), then
//              `size` bytes of payload.
//   "req"      client -> daemon: {int32 type; int32 n; int64 jobid; int32 pids[n];}
//              (16 + 4n bytes). The daemon registers the process under that exact pid list
//              at its first poll and forgets it after a minute of silence.
//   reply      daemon -> client: a "req" whose payload is the configuration text (no NUL),
//              or empty when nothing is pending. A poll with n = 0 gets no reply.
//
// Integers are little-endian: the daemon reads them in its native order, and both x86-64
// and aarch64 are little-endian. The header's size is a size_t there, hence 8 bytes.
//
// Everything here is pure except pidAndAncestors (reads /proc) and jobIdFromEnvironment.

namespace kinetrace::ondemand {

constexpr std::size_t kDynologHeaderBytes = 40;
constexpr std::size_t kDynologTypeBytes = 32;  // of the header, NUL included
constexpr std::size_t kPollFixedBytes = 16;    // a poll's payload without its pids
// The poll's `type`: the daemon hands a pending configuration over only on a poll with this
// bit; without it the poll only keeps the process registered.
constexpr int32_t kPollWantsActivities = 2;
constexpr int32_t kPollBusy = 0;  // recording: keep me registered, hand nothing

constexpr const char* kDynologDaemonName = "dynolog";
constexpr const char* kDynologClientPrefix = "dynoconfigclient";
constexpr const char* kDynologRequestType = "req";

struct DynologMessage {
  std::string type;     // without its NUL padding
  std::string payload;  // `size` bytes
};

// One datagram: the header, then the payload. A type longer than 31 bytes is cut to 31, so
// that it stays NUL-terminated as the daemon expects.
std::string encodeMessage(std::string_view type, std::string_view payload);
// The message one datagram holds, or why it is not one: shorter than a header, a size that
// is not the payload's, or a type without its NUL.
detail::Result<DynologMessage> decodeMessage(std::string_view datagram);

struct Poll {
  int32_t type = 0;  // kPollWantsActivities or kPollBusy
  int64_t jobId = 0;
  std::vector<int32_t> pids;  // the process's own first, then its ancestors
};

std::string encodePoll(const Poll& poll);
// The poll a "req" payload holds, or why it is not one (shorter than 16 bytes, a negative
// count, or a length that is not 16 + 4n).
detail::Result<Poll> decodePoll(std::string_view payload);

// The address of socket `name`: abstract when `dir` is empty (addrlen =
// sizeof(sa_family_t) + strlen(name) + 2), else the file dir/name (addrlen counts the path's
// NUL). Fails, saying why, when the name is empty, holds a NUL, or does not fit sockaddr_un.
detail::Result<std::pair<sockaddr_un, socklen_t>> dynologAddress(const std::string& name,
                                                                 const std::string& dir);

// A client's socket name: kDynologClientPrefix and 32 random hex digits (128 bits from
// /dev/urandom, or std::random_device where it cannot be read).
std::string randomClientName();

// `pid`, then its parent, grandparent, ... from /proc/PID/stat, at most `maxAncestors` of
// them, stopping after the ancestor whose parent is 0 (init, or a namespace's first process)
// or where /proc cannot be read. The identity the daemon matches a trigger's pids against.
std::vector<int32_t> pidAndAncestors(int32_t pid, std::size_t maxAncestors = 10);

// SLURM_JOB_ID as a number, 0 when unset or not a non-negative decimal integer.
int64_t jobIdFromEnvironment();

}  // namespace kinetrace::ondemand
