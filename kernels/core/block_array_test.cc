#include "kernels/core/block_array.h"

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/types/span.h"
#include "gtest/gtest.h"

namespace gmmscore {
namespace {

// A block of `count` values 10, 11, 12, ... whose release sets *released.
std::shared_ptr<uint16_t> Block(int count, bool* released) {
  auto* values = new uint16_t[count];
  for (int i = 0; i < count; ++i) values[i] = static_cast<uint16_t>(10 + i);
  return std::shared_ptr<uint16_t>(values, [released](uint16_t* p) {
    *released = true;
    delete[] p;
  });
}

TEST(BlockArrayTest, AVectorIsTakenOverNotCopied) {
  std::vector<uint16_t> values(1000, 7);
  const uint16_t* storage = values.data();
  BlockArray<uint16_t> array = std::move(values);
  EXPECT_EQ(array.data(), storage);
  EXPECT_FALSE(array.on_block());
  EXPECT_EQ(array.size(), 1000u);
  BlockArray<uint16_t> listed = {1, 2, 3};
  EXPECT_EQ(listed[2], 3);
}

TEST(BlockArrayTest, OnBlockReadsTheBlockAndSpansIt) {
  bool released = false;
  {
    BlockArray<uint16_t> array = BlockArray<uint16_t>::OnBlock(Block(5, &released), 4);
    EXPECT_TRUE(array.on_block());
    EXPECT_EQ(array.size(), 4u);
    const absl::Span<const uint16_t> view = array;
    EXPECT_EQ(view.size(), 4u);
    EXPECT_EQ(view[3], 13);
    BlockArray<uint16_t> moved = std::move(array);
    EXPECT_EQ(array.size(), 0u);  // NOLINT: a moved-from array is empty
    EXPECT_EQ(moved[0], 10);
    EXPECT_FALSE(released);
  }
  EXPECT_TRUE(released);
}

TEST(BlockArrayTest, CopiesAreDeepAndCompareByValue) {
  bool released = false;
  BlockArray<uint16_t> on_block = BlockArray<uint16_t>::OnBlock(Block(3, &released), 3);
  BlockArray<uint16_t> copy = on_block;
  EXPECT_FALSE(copy.on_block());
  EXPECT_NE(copy.data(), on_block.data());
  EXPECT_TRUE(copy == on_block);
  EXPECT_TRUE(copy == (BlockArray<uint16_t>{10, 11, 12}));
  copy[1] = 0;
  EXPECT_FALSE(copy == on_block);
  EXPECT_FALSE(on_block == (BlockArray<uint16_t>{10, 11}));
}

TEST(BlockArrayTest, ResizeAndAssignLeaveTheBlockKeepingWhatTheyShould) {
  bool released = false;
  BlockArray<uint16_t> array = BlockArray<uint16_t>::OnBlock(Block(6, &released), 6);
  array.resize(8);
  EXPECT_TRUE(released);
  EXPECT_FALSE(array.on_block());
  ASSERT_EQ(array.size(), 8u);
  EXPECT_EQ(array[5], 15);  // the block's elements kept, as a vector's resize would

  bool released2 = false;
  BlockArray<uint16_t> again = BlockArray<uint16_t>::OnBlock(Block(6, &released2), 6);
  again.assign(again.begin() + 2, again.begin() + 5);  // from its own block
  EXPECT_TRUE(released2);
  EXPECT_TRUE(again == (BlockArray<uint16_t>{12, 13, 14}));
}

}  // namespace
}  // namespace gmmscore
