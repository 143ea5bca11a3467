// The command's one prefix on library messages, whichever way the library spells them.

#include "error_text.h"

#include <gtest/gtest.h>

namespace kinetrace::cli {
namespace {

TEST(ErrorTextTest, LeadingKinetracePrefixesAreRemoved) {
  EXPECT_EQ(withoutKinetracePrefix("kinetrace: cannot write trace to t.json: File too large"),
            "cannot write trace to t.json: File too large");
  EXPECT_EQ(withoutKinetracePrefix("kinetrace config: delay must be a duration"),
            "delay must be a duration");
}

TEST(ErrorTextTest, APrefixWrappedAroundAnotherIsRemovedToo) {
  EXPECT_EQ(withoutKinetracePrefix("kinetrace: kinetrace config: unknown key \"x\""),
            "unknown key \"x\"");
}

TEST(ErrorTextTest, MessagesWithoutAPrefixAreLeftAlone) {
  EXPECT_EQ(withoutKinetracePrefix("environment variable KINETRACE_X: unknown key"),
            "environment variable KINETRACE_X: unknown key");
  EXPECT_EQ(withoutKinetracePrefix("not a kinetrace: summary"), "not a kinetrace: summary")
      << "only a leading prefix is the library's";
  EXPECT_EQ(withoutKinetracePrefix("kinetrace:no space"), "kinetrace:no space");
  EXPECT_EQ(withoutKinetracePrefix(""), "");
}

TEST(ErrorTextTest, AnErrorLineHasOnePrefixTheCommandsWhenTheMessageNamesIt) {
  EXPECT_EQ(errorLine("kinetrace: kinetrace convert: out.json is also an input"),
            "kinetrace convert: out.json is also an input");
  EXPECT_EQ(errorLine("kinetrace convert: out.json is also an input"),
            "kinetrace convert: out.json is also an input");
  EXPECT_EQ(errorLine("cannot read t.json: no such file or directory"),
            "kinetrace: cannot read t.json: no such file or directory");
  EXPECT_EQ(errorLine("kinetrace: kinetrace config: unknown key \"x\""),
            "kinetrace: unknown key \"x\"");
  EXPECT_EQ(errorLine("kinetrace nonsense: x"), "kinetrace: kinetrace nonsense: x")
      << "only a command's own name is a prefix";
}

}  // namespace
}  // namespace kinetrace::cli
