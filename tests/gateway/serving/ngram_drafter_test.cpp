// Prompt lookup (gateway/serving/ngram_drafter.cpp): the longest recent suffix match wins, the
// latest earlier occurrence among equal lengths, drafts never run past the history, and no
// match (or k = 0) drafts nothing.
#include <gtest/gtest.h>

#include "gateway/serving/drafter.hpp"

namespace ds4::serving {
namespace {

using V = std::vector<Token>;

TEST(NgramDrafter, ProposesWhatFollowedTheSuffixEarlier) {
  EXPECT_EQ(ngram_draft(V{1, 2, 3, 4, 1, 2}, 3), (V{3, 4, 1}));
  EXPECT_EQ(ngram_draft(V{1, 2, 3, 4, 1, 2}, 1), (V{3}));
  // Only two tokens follow the match: the draft stops at the end of the history.
  EXPECT_EQ(ngram_draft(V{7, 1, 2, 9, 1, 2}, 5), (V{9, 1, 2}));
}

TEST(NgramDrafter, LongestSuffixThenLatestOccurrence) {
  // "5 1 2" (3 tokens) occurred at the start; "1 2" alone more recently: the longer match wins.
  EXPECT_EQ(ngram_draft(V{5, 1, 2, 9, 7, 1, 2, 8, 5, 1, 2}, 2), (V{9, 7}));
  // Two earlier occurrences of "1 2": the latest one's continuation.
  EXPECT_EQ(ngram_draft(V{1, 2, 3, 0, 1, 2, 4, 0, 6, 1, 2}, 1), (V{4}));
}

TEST(NgramDrafter, InsideARepeatingRunAnOlderMatchGivesTheFullDraft) {
  // The latest "3 3 3 3" ends one token back (one token follows it); older ones are followed by
  // more, and the draft takes k of them.
  EXPECT_EQ(ngram_draft(V{3, 3, 3, 3, 3, 3, 3, 3, 3}, 3), (V{3, 3, 3}));
  EXPECT_EQ(ngram_draft(V{1, 2, 1, 2, 1, 2, 1, 2}, 4), (V{1, 2, 1, 2}));
}

TEST(NgramDrafter, NoMatchOrNoRoomDraftsNothing) {
  EXPECT_TRUE(ngram_draft(V{1, 2, 3, 4, 5, 6}, 4).empty());
  EXPECT_TRUE(ngram_draft(V{1, 2, 1, 2}, 0).empty());
  EXPECT_TRUE(ngram_draft(V{1}, 4).empty());
  EXPECT_TRUE(ngram_draft(V{}, 4).empty());
  // A single repeated token is a one-token suffix: below the minimum match.
  EXPECT_TRUE(ngram_draft(V{3, 9, 3}, 4).empty());
}

}  // namespace
}  // namespace ds4::serving
