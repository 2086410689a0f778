#include "base/counters.h"

#include <type_traits>

namespace journalkv::base {
namespace {

// A row's raw value as its field's type: milliseconds for kNanos rows.
template <typename T>
T FieldOf(CounterUnit unit, uint64_t raw) {
  if constexpr (std::is_same_v<T, bool>) {
    return raw != 0;
  } else if constexpr (std::is_floating_point_v<T>) {
    return unit == CounterUnit::kNanos ? static_cast<T>(raw) / 1e6 : static_cast<T>(raw);
  } else {
    return static_cast<T>(raw);
  }
}

}  // namespace

std::optional<Counter> FindCounter(absl::string_view name) {
  for (const CounterInfo& row : kCounterTable) {
    if (row.name == name) return row.id;
  }
  return std::nullopt;
}

CounterValues CounterValues::From(const CounterArray& raw) {
  CounterValues v;
#define JKV_COUNTER_FROM(id, name, type, unit, kind, scope, description) \
  v.name = FieldOf<type>(CounterUnit::unit, raw[Counter::id]);
  JKV_COUNTERS(JKV_COUNTER_FROM)
#undef JKV_COUNTER_FROM
  return v;
}

double CounterValues::Value(Counter id) const {
  switch (id) {
#define JKV_COUNTER_VALUE(id, name, type, unit, kind, scope, description) \
  case Counter::id:                                                 \
    return static_cast<double>(name);
    JKV_COUNTERS(JKV_COUNTER_VALUE)
#undef JKV_COUNTER_VALUE
  }
  return 0;
}

std::optional<double> CounterValues::Value(absl::string_view name) const {
  const std::optional<Counter> id = FindCounter(name);
  if (!id.has_value()) return std::nullopt;
  return Value(*id);
}

}  // namespace journalkv::base
