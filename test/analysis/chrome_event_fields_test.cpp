// A Chrome trace event's fields as the model holds them: times exact to the nanosecond,
// ids that fit or say why not, phases, and nlohmann's messages in plain words.

#include "analysis/chrome_event_fields.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

namespace kinetrace::detail {
namespace {

using Json = nlohmann::ordered_json;

TEST(ChromeEventFieldsTest, PlainDecimalMicrosecondsAreExactNanoseconds) {
  EXPECT_EQ(microsTextToNanos("12"), std::optional<int64_t>(12'000));
  EXPECT_EQ(microsTextToNanos("1234.5678"), std::optional<int64_t>(1'234'568));
  EXPECT_EQ(microsTextToNanos("1234.5674"), std::optional<int64_t>(1'234'567));
  EXPECT_EQ(microsTextToNanos("-3.25"), std::optional<int64_t>(-3'250));
  EXPECT_EQ(microsTextToNanos(".5"), std::optional<int64_t>(500));
  // An epoch time a double would round by a quarter of a microsecond.
  EXPECT_EQ(microsTextToNanos("1700000000123456.789"),
            std::optional<int64_t>(1'700'000'000'123'456'789));
}

TEST(ChromeEventFieldsTest, TheLastNanosecondOfInt64ReadsBack) {
  EXPECT_EQ(microsTextToNanos("9223372036854775.807"),
            std::optional<int64_t>(std::numeric_limits<int64_t>::max()));
  EXPECT_EQ(microsTextToNanos("9223372036854775.808"), std::nullopt);
  EXPECT_EQ(microsTextToNanos("99999999999999999999"), std::nullopt);
}

TEST(ChromeEventFieldsTest, AnExponentGoesThroughADoubleRoundedToTheNanosecond) {
  EXPECT_EQ(microsTextToNanos("1.5e3"), std::optional<int64_t>(1'500'000));
  EXPECT_EQ(microsTextToNanos("2.5e-3"), std::optional<int64_t>(3));
  EXPECT_EQ(microsTextToNanos("1e400"), std::nullopt);
  EXPECT_EQ(microsTextToNanos("1e16"), std::nullopt);  // 10^19 ns, past int64
}

TEST(ChromeEventFieldsTest, TextThatIsNoNumberGivesNothing) {
  EXPECT_EQ(microsTextToNanos(""), std::nullopt);
  EXPECT_EQ(microsTextToNanos("-"), std::nullopt);
  EXPECT_EQ(microsTextToNanos("."), std::nullopt);
  EXPECT_EQ(microsTextToNanos("12abc"), std::nullopt);
}

TEST(ChromeEventFieldsTest, AnIntegerPastInt64IsTooLargeNotWrapped) {
  const Integer fits = integerOf(Json(std::numeric_limits<int64_t>::max()));
  EXPECT_EQ(fits.status, IntegerStatus::Fits);
  EXPECT_EQ(fits.value, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(integerOf(Json(uint64_t{1} << 63)).status, IntegerStatus::TooLarge);
  EXPECT_EQ(integerOf(Json(-7)).value, -7);
}

TEST(ChromeEventFieldsTest, AnIntegerMayBeWrittenAsText) {
  EXPECT_EQ(integerOf(Json("42")).value, 42);
  EXPECT_EQ(integerOf(Json("0x1f")).value, 31);
  EXPECT_EQ(integerOf(Json("9223372036854775808")).status, IntegerStatus::TooLarge);
  EXPECT_EQ(integerOf(Json("12 ")).status, IntegerStatus::NotANumber);
  EXPECT_EQ(integerOf(Json("")).status, IntegerStatus::NotANumber);
  EXPECT_EQ(integerOf(Json(1.5)).status, IntegerStatus::NotANumber);
}

TEST(ChromeEventFieldsTest, FlowIdsAreUnsignedAndANegativeOneIsSaidSo) {
  const FlowId top = flowIdOf(Json(std::numeric_limits<uint64_t>::max()));
  EXPECT_EQ(top.status, FlowIdStatus::Fits);
  EXPECT_EQ(top.value, std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(flowIdOf(Json("18446744073709551615")).value, std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(flowIdOf(Json(-1)).status, FlowIdStatus::Negative);
  EXPECT_EQ(flowIdOf(Json("-1")).status, FlowIdStatus::Negative);
  EXPECT_EQ(flowIdOf(Json("18446744073709551616")).status, FlowIdStatus::NotANumber);
  EXPECT_EQ(flowIdOf(Json(nullptr)).status, FlowIdStatus::NotANumber);
}

TEST(ChromeEventFieldsTest, FittingInt64TakesJsonIntegersOnly) {
  EXPECT_EQ(fittingInt64(Json(5)), std::optional<int64_t>(5));
  EXPECT_EQ(fittingInt64(Json("5")), std::nullopt);
  EXPECT_EQ(fittingInt64(Json(uint64_t{1} << 63)), std::nullopt);
}

TEST(ChromeEventFieldsTest, PhasesTheModelHolds) {
  EXPECT_EQ(phaseOf("X"), std::optional<Phase>(Phase::Complete));
  EXPECT_EQ(phaseOf("i"), std::optional<Phase>(Phase::Instant));
  EXPECT_EQ(phaseOf("I"), std::optional<Phase>(Phase::Instant));
  EXPECT_EQ(phaseOf("C"), std::optional<Phase>(Phase::Counter));
  EXPECT_EQ(phaseOf("s"), std::optional<Phase>(Phase::FlowStart));
  EXPECT_EQ(phaseOf("f"), std::optional<Phase>(Phase::FlowEnd));
  EXPECT_EQ(phaseOf("M"), std::optional<Phase>(Phase::Metadata));
  EXPECT_EQ(phaseOf("B"), std::nullopt);
  EXPECT_EQ(phaseOf("XX"), std::nullopt);
}

TEST(ChromeEventFieldsTest, PlainReasonDropsNlohmannsTagAndPlace) {
  EXPECT_EQ(plainReason("[json.exception.parse_error.101] parse error at line 1, column 5: "
                        "syntax error while parsing value"),
            "syntax error while parsing value");
  EXPECT_EQ(plainReason("[json.exception.out_of_range.406] number overflow parsing '1e400'"),
            "number overflow parsing '1e400'");
  EXPECT_EQ(plainReason("something else"), "something else");
}

}  // namespace
}  // namespace kinetrace::detail
