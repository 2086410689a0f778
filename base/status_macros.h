// Status propagation macros. Debian's Abseil 20220623 has no RETURN_IF_ERROR, so journalkv
// defines its own, prefixed JKV_ so that a later Abseil cannot collide with them.
//
//   JKV_RETURN_IF_ERROR(file->Sync());
//   JKV_ASSIGN_OR_RETURN(std::unique_ptr<File> f, fs->Open(path, flags));
#ifndef JOURNALKV_BASE_STATUS_MACROS_H_
#define JOURNALKV_BASE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define JKV_RETURN_IF_ERROR(expr)                      \
  do {                                                 \
    ::absl::Status jkv_status_ = (expr);               \
    if (!jkv_status_.ok()) return jkv_status_;         \
  } while (0)

#define JKV_STATUS_CONCAT_INNER_(a, b) a##b
#define JKV_STATUS_CONCAT_(a, b) JKV_STATUS_CONCAT_INNER_(a, b)

#define JKV_ASSIGN_OR_RETURN(lhs, expr) \
  JKV_ASSIGN_OR_RETURN_IMPL_(JKV_STATUS_CONCAT_(jkv_statusor_, __LINE__), lhs, expr)

#define JKV_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                               \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = std::move(statusor).value()

#endif  // JOURNALKV_BASE_STATUS_MACROS_H_
