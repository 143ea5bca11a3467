#pragma once

// A protobuf message's bytes for a test, written field by field:
//
//   const std::string clock = protoMessage([](proto::ProtoWriter& w) {
//     w.varint(pftrace::kClockId, 64);
//   });

#include <string>

#include "output/protobuf.h"

namespace kinetrace::detail {

template <typename Write>
std::string protoMessage(Write write) {
  proto::ByteBuffer buffer;
  proto::ProtoWriter writer(buffer);
  write(writer);
  return std::string(buffer.view());
}

}  // namespace kinetrace::detail
