#include "server/answer_budget.h"

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace gmmscore {
namespace {

TEST(AnswerBudgetTest, ChargesUpToTheLimitAndReleasesOnDestruction) {
  AnswerBudget budget(100);
  auto stream = std::make_shared<std::atomic<int64_t>>(0);
  AnswerCharge a, b, c;
  ASSERT_TRUE(budget.TryCharge(60, stream, &a));
  EXPECT_EQ(budget.held(), 60);
  EXPECT_EQ(stream->load(), 60);
  EXPECT_FALSE(budget.TryCharge(41, stream, &b));  // 101 > 100: nothing added
  EXPECT_EQ(budget.held(), 60);
  EXPECT_EQ(stream->load(), 60);
  EXPECT_EQ(b.bytes(), 0);
  EXPECT_EQ(budget.refusals(), 1);
  ASSERT_TRUE(budget.TryCharge(40, stream, &b));  // exactly the limit
  EXPECT_EQ(budget.held(), 100);
  { AnswerCharge moved = std::move(a); }  // released by the moved-to charge only
  EXPECT_EQ(budget.held(), 40);
  EXPECT_EQ(stream->load(), 40);
  b.Release();
  b.Release();  // idempotent
  EXPECT_EQ(budget.held(), 0);
  EXPECT_EQ(stream->load(), 0);
  ASSERT_TRUE(budget.TryCharge(10, nullptr, &c));  // a charge without a stream
  c = AnswerCharge();  // assignment releases the old charge
  EXPECT_EQ(budget.held(), 0);
}

TEST(AnswerBudgetTest, ShrinksACharge) {
  AnswerBudget budget(100);
  auto stream = std::make_shared<std::atomic<int64_t>>(0);
  AnswerCharge charge, more;
  ASSERT_TRUE(budget.TryCharge(80, stream, &charge));
  EXPECT_FALSE(budget.TryCharge(30, stream, &more));
  charge.ShrinkTo(120);  // never grows
  charge.ShrinkTo(-1);
  EXPECT_EQ(charge.bytes(), 80);
  charge.ShrinkTo(20);
  EXPECT_EQ(charge.bytes(), 20);
  EXPECT_EQ(budget.held(), 20);
  EXPECT_EQ(stream->load(), 20);
  EXPECT_TRUE(budget.TryCharge(30, stream, &more));  // room again
  charge.Release();
  more.Release();
  EXPECT_EQ(budget.held(), 0);
  EXPECT_EQ(stream->load(), 0);
}

TEST(AnswerBudgetTest, FormatsBytesForMessages) {
  EXPECT_EQ(FormatBytes(2400), "2400 bytes");
  EXPECT_EQ(FormatBytes((int64_t{1} << 20) - 1), "1048575 bytes");
  EXPECT_EQ(FormatBytes(int64_t{7} << 19), "3.5 MiB");
}

TEST(AnswerBudgetTest, NoLimitStillCounts) {
  AnswerBudget budget(0);
  AnswerCharge charge;
  ASSERT_TRUE(budget.TryCharge(int64_t{1} << 40, nullptr, &charge));
  EXPECT_EQ(budget.held(), int64_t{1} << 40);
}

TEST(AnswerBudgetTest, ConcurrentChargesNeverPassTheLimit) {
  AnswerBudget budget(1000);
  std::atomic<int64_t> most{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      for (int n = 0; n < 20000; ++n) {
        AnswerCharge charge;
        if (budget.TryCharge(7, nullptr, &charge)) {
          const int64_t held = budget.held();
          int64_t seen = most.load();
          while (held > seen && !most.compare_exchange_weak(seen, held)) {
          }
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_LE(most.load(), 1000);
  EXPECT_EQ(budget.held(), 0);
}

TEST(AnswerBudgetTest, SetToGrowsPastTheLimitAndRefusesUntilTaken) {
  AnswerBudget budget(100);
  auto stream = std::make_shared<std::atomic<int64_t>>(0);
  AnswerCharge charge, more;
  ASSERT_TRUE(budget.TryCharge(10, stream, &charge));  // an admission estimate
  charge.SetTo(-1);
  EXPECT_EQ(charge.bytes(), 10);
  charge.SetTo(150);  // the results came back larger: never refused
  EXPECT_EQ(charge.bytes(), 150);
  EXPECT_EQ(budget.held(), 150);
  EXPECT_EQ(stream->load(), 150);
  EXPECT_FALSE(budget.TryCharge(1, stream, &more));
  charge.SetTo(40);  // and shrinks as ShrinkTo does
  EXPECT_EQ(budget.held(), 40);
  EXPECT_EQ(stream->load(), 40);
  EXPECT_TRUE(budget.TryCharge(60, stream, &more));
  charge.Release();
  more.Release();
  EXPECT_EQ(budget.held(), 0);
  EXPECT_EQ(stream->load(), 0);
}

}  // namespace
}  // namespace gmmscore
