#include "kernels/core/matrix.h"

#include <memory>
#include <utility>

#include "gtest/gtest.h"

namespace gmmscore {
namespace {

// A block of `count` floats 0, 1, 2, ... whose release sets *released.
std::shared_ptr<float> CountingBlock(int count, bool* released) {
  float* floats = new float[count];
  for (int i = 0; i < count; ++i) floats[i] = static_cast<float>(i);
  return std::shared_ptr<float>(floats, [released](float* p) {
    *released = true;
    delete[] p;
  });
}

TEST(FloatMatrixTest, OnBlockReadsAndWritesTheBlock) {
  bool released = false;
  std::shared_ptr<float> block = CountingBlock(6, &released);
  float* floats = block.get();
  FloatMatrix matrix = FloatMatrix::OnBlock(std::move(block), 2, 3);
  EXPECT_TRUE(matrix.on_block());
  EXPECT_EQ(matrix.data(), floats);
  EXPECT_EQ(matrix.at(1, 2), 5.0f);
  EXPECT_EQ(matrix.row(1)[0], 3.0f);
  EXPECT_EQ(matrix.span().size(), 6u);
  EXPECT_EQ(matrix.view().at(1, 1), 4.0f);
  matrix.at(0, 1) = -7.0f;
  EXPECT_EQ(floats[1], -7.0f);
  EXPECT_FALSE(released);
}

TEST(FloatMatrixTest, TheBlockIsReleasedWithTheLastMatrixHoldingIt) {
  bool released = false;
  {
    FloatMatrix first = FloatMatrix::OnBlock(CountingBlock(4, &released), 2, 2);
    FloatMatrix moved = std::move(first);
    EXPECT_TRUE(moved.on_block());
    EXPECT_EQ(moved.at(1, 1), 3.0f);
    EXPECT_FALSE(released);
  }
  EXPECT_TRUE(released);
}

TEST(FloatMatrixTest, ACopyOfABlockMatrixOwnsItsFloats) {
  bool released = false;
  FloatMatrix copy;
  {
    FloatMatrix on_block = FloatMatrix::OnBlock(CountingBlock(6, &released), 3, 2);
    copy = on_block;
    FloatMatrix constructed(on_block);
    EXPECT_FALSE(copy.on_block());
    EXPECT_FALSE(constructed.on_block());
    EXPECT_NE(copy.data(), on_block.data());
    EXPECT_TRUE(copy == on_block);
    EXPECT_TRUE(constructed == on_block);
    on_block.at(0, 0) = 9.0f;
    EXPECT_EQ(copy.at(0, 0), 0.0f);  // not aliased
    EXPECT_FALSE(copy == on_block);
  }
  EXPECT_TRUE(released);
  EXPECT_EQ(copy.rows(), 3);
  EXPECT_EQ(copy.at(2, 1), 5.0f);
}

TEST(FloatMatrixTest, ResizeLeavesTheBlockForAVectorOfItsOwn) {
  bool released = false;
  FloatMatrix matrix = FloatMatrix::OnBlock(CountingBlock(4, &released), 2, 2);
  matrix.Resize(3, 5);
  EXPECT_TRUE(released);
  EXPECT_FALSE(matrix.on_block());
  EXPECT_EQ(matrix.span().size(), 15u);
  matrix.Fill(2.0f);
  EXPECT_EQ(matrix.at(2, 4), 2.0f);
}

TEST(FloatMatrixTest, AssigningAVectorMatrixOverABlockReleasesIt) {
  bool released = false;
  FloatMatrix matrix = FloatMatrix::OnBlock(CountingBlock(4, &released), 2, 2);
  matrix = FloatMatrix(1, 1, 3.0f);
  EXPECT_TRUE(released);
  EXPECT_FALSE(matrix.on_block());
  EXPECT_EQ(matrix.at(0, 0), 3.0f);
}

TEST(FloatMatrixTest, MatricesOfEqualShapeCompareByValue) {
  FloatMatrix a(2, 2, 1.0f), b(2, 2, 1.0f), c(2, 3, 1.0f);
  EXPECT_TRUE(a == b);
  EXPECT_FALSE(a == c);
  b.at(1, 0) = 0.5f;
  EXPECT_FALSE(a == b);
}

}  // namespace
}  // namespace gmmscore
