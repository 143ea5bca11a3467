#include "analysis/perfetto_track_events.h"

#include <fmt/format.h>

#include "analysis/trace_reader.h"
#include "kinetrace/error.h"
#include "output/perfetto_schema.h"
#include "output/protobuf.h"

namespace kinetrace::detail {

using proto::ProtoField;
using proto::ProtoReader;
using namespace pftrace;

Annotation decodeAnnotation(const SequenceState& sequence, std::string_view bytes,
                            std::size_t depth) {
  if (depth >= kMaxProtoDepth) {
    throw Error(fmt::format("a debug annotation nested more than {} levels deep", kMaxProtoDepth));
  }
  Annotation a;
  ProtoReader reader(bytes);
  ProtoField field;
  std::vector<int64_t> array;
  bool arrayOfInts = true;
  while (reader.next(field)) {
    switch (field.number) {
      case kAnnotationNameIid:
        a.name = std::string(
            SequenceState::interned(sequence.annotationNames, field.value, "annotation name"));
        break;
      case kAnnotationName:
        a.name = std::string(field.bytes);
        break;
      case kAnnotationInt:
        a.kind = Annotation::Kind::Int;
        a.i = field.asInt64();
        break;
      case kAnnotationUint:
        a.kind = Annotation::Kind::Uint;
        a.u = field.value;
        break;
      case kAnnotationDouble:
        a.kind = Annotation::Kind::Double;
        a.d = field.asDouble();
        break;
      case kAnnotationBool:
        a.kind = Annotation::Kind::Bool;
        a.b = field.value != 0;
        break;
      case kAnnotationString:
        a.kind = Annotation::Kind::String;
        a.text = std::string(field.bytes);
        break;
      case kAnnotationLegacyJson:
        a.kind = Annotation::Kind::Json;
        a.text = std::string(field.bytes);
        break;
      case kAnnotationStringIid:  // odd ids are JSON texts (output/perfetto_sink.cpp)
        a.kind = field.value % 2 == 1 ? Annotation::Kind::Json : Annotation::Kind::String;
        a.text = std::string(
            SequenceState::interned(sequence.stringValues, field.value, "string value"));
        break;
      case kAnnotationArray: {
        const Annotation item = decodeAnnotation(sequence, field.bytes, depth + 1);
        if (item.kind == Annotation::Kind::Int) {
          array.push_back(item.i);
        } else {
          arrayOfInts = false;
        }
        break;
      }
      default:
        break;
    }
  }
  if (!array.empty() || !arrayOfInts) {
    if (!arrayOfInts || array.size() != 3) {
      throw Error(fmt::format("annotation \"{}\" is an array kinetrace does not write", a.name));
    }
    a.kind = Annotation::Kind::Dim3;
    a.dim = Dim3{array[0], array[1], array[2]};
  }
  return a;
}

DecodedEvent decodeTrackEvent(const SequenceState& sequence, std::string_view bytes,
                              int64_t timeNs) {
  DecodedEvent e;
  e.timeNs = timeNs;
  e.track = sequence.hasDefaultTrack ? sequence.defaultTrack : 0;
  ProtoReader reader(bytes);
  ProtoField field;
  while (reader.next(field)) {
    switch (field.number) {
      case kEventType:
        e.type = field.value;
        break;
      case kEventTrackUuid:
        e.track = field.value;
        break;
      case kEventNameIid:
        e.name = std::string(SequenceState::interned(sequence.names, field.value, "event name"));
        break;
      case kEventName:
        e.name = std::string(field.bytes);
        break;
      case kEventCategoryIids:
        e.category =
            std::string(SequenceState::interned(sequence.categories, field.value, "category"));
        break;
      case kEventCategories:
        e.category = std::string(field.bytes);
        break;
      case kEventDebugAnnotations:
        e.annotations.push_back(decodeAnnotation(sequence, field.bytes));
        break;
      case kEventFlowIds:  // fixed64 (older kinetrace files) or varint (flow_ids_old)
      case kEventFlowIdsOld:
        e.flowIds.push_back(field.value);
        break;
      case kEventTerminatingFlowIds:
      case kEventTerminatingFlowIdsOld:
        e.terminatingFlowIds.push_back(field.value);
        break;
      case kEventLegacyEvent: {
        ProtoReader legacy(field.bytes);
        ProtoField part;
        while (legacy.next(part)) {
          if (part.number == kLegacyPhase) e.legacyPhase = part.asInt64();
          if (part.number == kLegacyUnscopedId) e.legacyId = part.value;
        }
        break;
      }
      case kEventCounterValue:
        e.hasCounter = true;
        e.counterInt = field.asInt64();
        break;
      case kEventDoubleCounterValue:
        e.hasCounter = true;
        e.counterIsDouble = true;
        e.counterDouble = field.asDouble();
        break;
      default:
        break;
    }
  }
  return e;
}

ArgValue annotationArg(const Annotation& a) {
  switch (a.kind) {
    case Annotation::Kind::Int:
      return a.i;
    case Annotation::Kind::Uint:
      return a.u;
    case Annotation::Kind::Double:
      return a.d;
    case Annotation::Kind::Bool:
      return a.b;
    case Annotation::Kind::String:
      return std::string_view(a.text);
    case Annotation::Kind::Json:
      return JsonText{a.text};
    case Annotation::Kind::Dim3:
      return a.dim;
    case Annotation::Kind::None:
      break;
  }
  return JsonText{"null"};
}

}  // namespace kinetrace::detail
