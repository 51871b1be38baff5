#include "rfs/core/memory_budget.hpp"

#include <atomic>
#include <chrono>
#include <thread>

#include <catch2/catch.hpp>

namespace rfs::core {

TEST_CASE("a memory budget admits what fits, or anything alone", "[core][memory_budget]") {
  MemoryBudget budget(100);
  CHECK(budget.HasRoomFor(100));
  CHECK(budget.HasRoomFor(1000));  // nothing charged: larger than the budget goes alone
  budget.Charge(60);
  CHECK(budget.HasRoomFor(40));
  CHECK_FALSE(budget.HasRoomFor(41));
  budget.Charge(60);  // charging never waits, and may go over
  CHECK(budget.used() == 120);
  CHECK(budget.peak() == 120);
  budget.Release(120);
  CHECK(budget.used() == 0);
  budget.Release(5);  // never below zero
  CHECK(budget.used() == 0);
  CHECK(budget.peak() == 120);
  MemoryBudget unlimited(0);
  unlimited.Charge(1 << 30);
  CHECK(unlimited.HasRoomFor(size_t{1} << 40));
}

TEST_CASE("a wait for room ends when bytes are released, or when cancelled",
          "[core][memory_budget][tsan]") {
  MemoryBudget budget(100);
  budget.Charge(90);
  SECTION("released") {
    std::atomic<bool> admitted{false};
    std::thread waiter([&] {
      CHECK(budget.WaitForRoom(50));
      admitted = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK_FALSE(admitted.load());
    budget.Release(60);  // 30 + 50 fits
    waiter.join();
    CHECK(admitted.load());
  }
  SECTION("cancelled") {
    std::atomic<bool> cancel{false};
    std::thread canceller([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      cancel = true;
    });
    CHECK_FALSE(budget.WaitForRoom(50, [&] { return cancel.load(); }));
    canceller.join();
    CHECK(budget.used() == 90);
  }
}

}  // namespace rfs::core
