#include "kernels/io/kaldi_text_table.h"

#include <memory>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "kernels/core/status_macros.h"

namespace gmmscore {
namespace {

using io_internal::KaldiArchiveInput;

// "ark:..."/"ark,t:..." and "scp:..." are specifiers; anything else a file.
bool IsSpecifier(absl::string_view rspecifier) {
  for (const absl::string_view kind : {"ark", "scp"}) {
    if (absl::StartsWith(rspecifier, kind) && rspecifier.size() > 3 &&
        (rspecifier[3] == ':' || rspecifier[3] == ',')) {
      return true;
    }
  }
  return false;
}

absl::StatusOr<std::unique_ptr<KaldiArchiveInput>> OpenTable(absl::string_view rspecifier) {
  if (IsSpecifier(rspecifier)) return KaldiArchiveInput::Open(rspecifier);
  absl::StatusOr<std::unique_ptr<KaldiArchiveInput>> in = KaldiArchiveInput::OpenFile(std::string(rspecifier));
  if (!in.ok()) return PrefixStatus(absl::StrCat("table '", rspecifier, "'"), in.status());
  return in;
}

}  // namespace

absl::Status KaldiTokenVectorHolder::Read(KaldiArchiveInput& in, Value* value) {
  if (in.binary()) return in.Error(absl::StatusCode::kInvalidArgument, "binary entry in a text table of tokens");
  *value = absl::StrSplit(in.ReadLine(), absl::ByAnyChar(" \t\r\v\f"), absl::SkipEmpty());
  return absl::OkStatus();
}

absl::StatusOr<std::vector<KaldiTokenListEntry>> ReadKaldiTokenListTable(absl::string_view rspecifier) {
  GMM_ASSIGN_OR_RETURN(std::unique_ptr<KaldiArchiveInput> in, OpenTable(rspecifier));
  const auto reader = KaldiArchiveReader<KaldiTokenVectorHolder>::FromInput(std::move(in));
  std::vector<KaldiTokenListEntry> entries;
  std::map<std::string, size_t> first_entry;  // key -> 1-based entry it was first in
  while (true) {
    GMM_ASSIGN_OR_RETURN(const bool more, reader->Next());
    if (!more) return entries;
    const auto [it, inserted] = first_entry.emplace(reader->key(), entries.size() + 1);
    if (!inserted) {
      return absl::InvalidArgumentError(absl::StrCat("table '", reader->source_name(), "': key '", reader->key(),
                                                     "' is given twice, on entries ", it->second, " and ",
                                                     entries.size() + 1));
    }
    entries.push_back({reader->key(), std::move(reader->mutable_value())});
  }
}

absl::StatusOr<std::map<std::string, std::string>> ReadKaldiTokenTable(absl::string_view rspecifier) {
  GMM_ASSIGN_OR_RETURN(std::vector<KaldiTokenListEntry> entries, ReadKaldiTokenListTable(rspecifier));
  std::map<std::string, std::string> table;
  for (KaldiTokenListEntry& entry : entries) {
    if (entry.value.size() != 1) {
      return absl::InvalidArgumentError(absl::StrCat("table '", rspecifier, "', key '", entry.key,
                                                     "': expected one token, got ", entry.value.size()));
    }
    table.emplace(std::move(entry.key), std::move(entry.value[0]));
  }
  return table;
}

}  // namespace gmmscore
