#include "kernels/io/sphinx_model.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "kernels/core/status_macros.h"
#include "kernels/io/internal/byte_reader.h"
#include "kernels/io/internal/file_util.h"

namespace gmmscore {
namespace {

using io_internal::ByteReader;

constexpr uint32_t kByteOrderMagic = 0x11223344;
// Larger counts mean a damaged header; checked before allocating.
constexpr int64_t kMaxCount = int64_t{1} << 31;
// Sphinx keeps senone ids as int16 (s3senid_t), in mdef's senone sequences too.
constexpr int kMaxSenones = 32768;

uint32_t ChecksumWords(uint32_t sum, const uint32_t* words, int64_t count) {
  for (int64_t i = 0; i < count; ++i) sum = ((sum << 20) | (sum >> 12)) + words[i];
  return sum;
}

// The text header of an s3 file and the byte-order magic after it.
struct S3Header {
  std::map<std::string, std::string> args;
  bool checksum = false;
};

absl::StatusOr<S3Header> ReadS3Header(absl::string_view bytes, ByteReader& in) {
  S3Header header;
  const size_t end = bytes.find("endhdr\n");
  if (!absl::StartsWith(bytes, "s3\n")) {
    if (bytes.size() < 3) return in.Truncated("the \"s3\" header");
    return in.ErrorAt(0, "not an s3 parameter file: it does not start with \"s3\\n\"");
  }
  if (end == absl::string_view::npos) return in.Truncated("the header (no \"endhdr\" line)");
  for (absl::string_view line : absl::StrSplit(bytes.substr(3, end - 3), '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> words = absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
    if (words.empty() || words[0][0] == '#') continue;
    header.args[std::string(words[0])] = words.size() > 1 ? std::string(words[1]) : "";
  }
  header.checksum = header.args.count("chksum0") > 0;
  GMM_RETURN_IF_ERROR(in.Skip(static_cast<int64_t>(end + 7), "the header"));
  const int64_t magic_at = in.offset();
  GMM_ASSIGN_OR_RETURN(const uint32_t magic, in.Read<uint32_t>("the byte-order magic"));
  if (magic != kByteOrderMagic) {
    if (ByteReader::Swap(magic) != kByteOrderMagic) {
      return in.ErrorAt(magic_at, absl::StrFormat("bad byte-order magic 0x%08x (expected 0x%08x in either byte order)",
                                                  magic, kByteOrderMagic));
    }
    in.set_big_endian(std::endian::native == std::endian::little);
  }
  return header;
}

// Reads int32 counts, adding them to the checksum.
class S3Body {
 public:
  explicit S3Body(ByteReader& in) : in_(in) {}
  absl::StatusOr<int32_t> Count(absl::string_view what) {
    const int64_t at = in_.offset();
    GMM_ASSIGN_OR_RETURN(const int32_t value, in_.ReadInt32(what));
    if (value <= 0 || value > kMaxCount) {
      return in_.ErrorAt(at, absl::StrCat(what, " is ", value, ", not a positive count"));
    }
    sum_ = ChecksumWords(sum_, reinterpret_cast<const uint32_t*>(&value), 1);
    return value;
  }
  absl::Status Floats(int64_t count, absl::string_view what, std::vector<float>* out) {
    GMM_RETURN_IF_ERROR(in_.ReadArray(count, what, out));
    sum_ = ChecksumWords(sum_, reinterpret_cast<const uint32_t*>(out->data()), count);
    return absl::OkStatus();
  }
  // Verifies the trailing checksum (when the header announced one) and that
  // nothing follows.
  absl::Status Finish(bool checksum) {
    if (checksum) {
      const int64_t at = in_.offset();
      GMM_ASSIGN_OR_RETURN(const uint32_t stored, in_.Read<uint32_t>("the checksum"));
      if (stored != sum_) {
        return absl::DataLossError(absl::StrFormat(
            "%s, byte offset %d: checksum mismatch: the file says 0x%08x, the data gives 0x%08x "
            "(corrupted or byte-swapped data?)",
            in_.what(), at, stored, sum_));
      }
    }
    if (!in_.at_end()) {
      return in_.Error(absl::StrCat(in_.remaining(), " unexpected bytes after the data"));
    }
    return absl::OkStatus();
  }

 private:
  ByteReader& in_;
  uint32_t sum_ = 0;
};

absl::StatusOr<std::string> ReadRequired(const std::string& path, absl::string_view what) {
  absl::StatusOr<std::string> bytes = io_internal::ReadFileToString(path);
  if (!bytes.ok()) {
    return PrefixStatus(absl::StrCat("Sphinx ", what), bytes.status());
  }
  return bytes;
}

bool FileExists(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

std::string Quote(absl::string_view text) { return absl::CEscape(text.substr(0, 60)); }

// --- mdef ------------------------------------------------------------------

absl::StatusOr<SphinxMdef> DecodeTextMdef(absl::string_view bytes, const std::string& name) {
  SphinxMdef mdef;
  std::map<std::string, int> counts;
  std::map<std::string, int> base_ids;
  int line_number = 0;
  bool have_version = false;
  int rows = 0;
  auto error = [&](absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat(name, ", line ", line_number, ": ", what));
  };
  for (absl::string_view line : absl::StrSplit(bytes, '\n')) {
    ++line_number;
    std::vector<absl::string_view> words = absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
    if (words.empty() || words[0][0] == '#') continue;
    if (!have_version) {
      if (words[0] != "0.3") return error(absl::StrCat("expected the version \"0.3\", got \"", Quote(words[0]), "\""));
      have_version = true;
      continue;
    }
    if (words.size() == 2 && absl::StartsWith(words[1], "n_")) {
      int value = 0;
      if (!absl::SimpleAtoi(words[0], &value) || value < 0) {
        return error(absl::StrCat("bad count \"", Quote(words[0]), "\" for ", words[1]));
      }
      counts[std::string(words[1])] = value;
      continue;
    }
    for (const char* required : {"n_base", "n_tri", "n_tied_state", "n_tied_ci_state"}) {
      if (!counts.count(required)) return error(absl::StrCat("phone line before the ", required, " count"));
    }
    mdef.num_senones = counts["n_tied_state"];
    mdef.num_ci_senones = counts["n_tied_ci_state"];
    if (mdef.num_senones > kMaxSenones) {
      return error(absl::StrCat("n_tied_state ", mdef.num_senones, " exceeds ", kMaxSenones,
                                " (senone ids are 16-bit in Sphinx)"));
    }
    if (mdef.senone_base_phone.empty()) mdef.senone_base_phone.assign(mdef.num_senones, -1);
    // base lft rt p attrib tmat state... N
    if (words.size() < 8 || words.back() != "N") {
      return error(absl::StrCat("expected \"base lft rt pos attrib tmat state-ids... N\", got \"", Quote(line), "\""));
    }
    SphinxPhone phone;
    if (rows < counts["n_base"]) {
      if (words[1] != "-" || words[2] != "-") return error("a base phone line has a context");
      phone.base = static_cast<int>(mdef.base_phones.size());
      base_ids[std::string(words[0])] = phone.base;
      mdef.base_phones.emplace_back(words[0]);
      phone.filler = words[4] == "filler";
    } else {
      int* ids[3] = {&phone.base, &phone.left, &phone.right};
      for (int k = 0; k < 3; ++k) {
        const auto it = base_ids.find(std::string(words[k]));
        if (it == base_ids.end()) return error(absl::StrCat("unknown base phone \"", Quote(words[k]), "\""));
        *ids[k] = it->second;
      }
      if (words[3].size() != 1 || !absl::StrContains("beis", words[3][0])) {
        return error(absl::StrCat("word position \"", Quote(words[3]), "\" is not one of b, e, i, s"));
      }
      phone.position = words[3][0];
    }
    if (!absl::SimpleAtoi(words[5], &phone.tmat) || phone.tmat < 0 || phone.tmat >= counts["n_tied_tmat"]) {
      return error(absl::StrCat("tmat \"", Quote(words[5]), "\" is not in [0, n_tied_tmat)"));
    }
    for (size_t i = 6; i + 1 < words.size(); ++i) {
      int senone = 0;
      if (!absl::SimpleAtoi(words[i], &senone) || senone < 0 || senone >= mdef.num_senones) {
        return error(absl::StrCat("state id \"", Quote(words[i]), "\" is not a senone in [0, ",
                                  mdef.num_senones, ")"));
      }
      if (mdef.senone_base_phone[senone] < 0) mdef.senone_base_phone[senone] = phone.base;
      phone.senones.push_back(senone);
    }
    mdef.phones.push_back(std::move(phone));
    ++rows;
  }
  if (!have_version) return absl::DataLossError(absl::StrCat(name, ": empty mdef (no version line)"));
  const int expected_rows = counts["n_base"] + counts["n_tri"];
  if (rows != expected_rows) {
    return absl::DataLossError(absl::StrCat(name, ": ", rows, " phone lines, the header says n_base + n_tri = ",
                                            expected_rows, " (truncated?)"));
  }
  mdef.num_phones = rows;
  mdef.num_tmats = counts["n_tied_tmat"];
  return mdef;
}

absl::StatusOr<SphinxMdef> DecodeBinaryMdef(absl::string_view bytes, const std::string& name) {
  ByteReader in(bytes, name, false);
  GMM_ASSIGN_OR_RETURN(const uint32_t marker, in.Read<uint32_t>("the BMDF marker"));
  if (marker != 0x46444d42u) in.set_big_endian(true);  // "BMDF" read the other way
  GMM_ASSIGN_OR_RETURN(const int32_t version, in.ReadInt32("the version"));
  if (version < 0 || version > 1) return in.ErrorAt(4, absl::StrCat("unsupported BMDF version ", version));
  GMM_ASSIGN_OR_RETURN(const int32_t description_bytes, in.ReadInt32("the description length"));
  GMM_RETURN_IF_ERROR(in.Skip(description_bytes, "the format description"));
  int32_t header[10];
  const char* names[10] = {"n_ciphone", "n_phone", "n_emit_state", "n_ci_sen", "n_sen",
                           "n_tmat",    "n_sseq",  "n_ctx",        "n_cd_tree", "sil"};
  for (int i = 0; i < 10; ++i) {
    const int64_t at = in.offset();
    GMM_ASSIGN_OR_RETURN(header[i], in.ReadInt32(names[i]));
    if (header[i] < 0 || header[i] > kMaxCount) return in.ErrorAt(at, absl::StrCat(names[i], " is ", header[i]));
  }
  const int n_ciphone = header[0], n_phone = header[1], n_emit_state = header[2];
  SphinxMdef mdef;
  mdef.binary = true;
  mdef.num_ci_senones = header[3];
  mdef.num_senones = header[4];
  mdef.num_phones = n_phone;
  const int n_sseq = header[6], n_cd_tree = header[8];
  if (n_ciphone == 0 || n_phone < n_ciphone) return in.Error("phone counts are inconsistent");
  if (mdef.num_senones > kMaxSenones) {
    return in.Error(absl::StrCat("n_sen ", mdef.num_senones, " exceeds ", kMaxSenones,
                                       " (the senone sequences hold 16-bit ids)"));
  }
  const int64_t names_start = in.offset();
  for (int i = 0; i < n_ciphone; ++i) {
    const absl::string_view rest = bytes.substr(in.offset());
    const size_t nul = rest.find('\0');
    if (nul == absl::string_view::npos) return in.Truncated("the base phone names");
    mdef.base_phones.emplace_back(rest.substr(0, nul));
    GMM_RETURN_IF_ERROR(in.Skip(static_cast<int64_t>(nul) + 1, "the base phone names"));
  }
  const int64_t padded = names_start + ((in.offset() - names_start + 3) & ~int64_t{3});
  GMM_RETURN_IF_ERROR(in.Skip(padded - in.offset(), "the padding"));
  GMM_RETURN_IF_ERROR(in.Skip(int64_t{8} * n_cd_tree, "the context tree"));
  // The table must be there before it is allocated: a damaged count would
  // otherwise ask for gigabytes (found by fuzzing).
  GMM_RETURN_IF_ERROR(in.Need(int64_t{12} * n_phone, "the phone table"));
  std::vector<int32_t> ssid(n_phone);
  mdef.phones.resize(n_phone);
  mdef.num_tmats = header[5];
  for (int p = 0; p < n_phone; ++p) {
    SphinxPhone& phone = mdef.phones[p];
    GMM_ASSIGN_OR_RETURN(ssid[p], in.ReadInt32("a phone's senone sequence id"));
    GMM_ASSIGN_OR_RETURN(phone.tmat, in.ReadInt32("a phone's transition matrix id"));
    // pocketsphinx's mdef_entry_t: CI phones {filler, 3 reserved}, CD
    // phones {wpos, base, left, right}, wpos 0..3 = internal, begin, end, single.
    GMM_ASSIGN_OR_RETURN(const absl::string_view info, in.ReadBytes(4, "a phone's attributes"));
    const auto byte = [&](int k) { return static_cast<int>(static_cast<unsigned char>(info[k])); };
    if (p < n_ciphone) {
      phone.base = p;
      phone.filler = byte(0) != 0;
    } else {
      phone.base = byte(1);
      phone.left = byte(2);
      phone.right = byte(3);
      phone.position = byte(0) < 4 ? "ibes"[byte(0)] : '?';
    }
    if (ssid[p] < 0 || ssid[p] >= n_sseq || phone.base >= n_ciphone || phone.left >= n_ciphone ||
        phone.right >= n_ciphone || phone.position == '?' || phone.tmat < 0 || phone.tmat >= header[5]) {
      return in.Error(absl::StrCat("phone ", p, " has senone sequence ", ssid[p], " of ", n_sseq, ", base phone ",
                                   phone.base, " (contexts ", phone.left, ", ", phone.right, ") of ", n_ciphone,
                                   ", word position ", byte(0), ", tmat ", phone.tmat, " of ", header[5]));
    }
  }
  GMM_ASSIGN_OR_RETURN(const int32_t sseq_size, in.ReadInt32("the senone sequence size"));
  std::vector<int16_t> sseq;
  GMM_RETURN_IF_ERROR(in.ReadArray(sseq_size, "the senone sequences", &sseq));
  std::vector<int64_t> starts;
  if (n_emit_state > 0) {
    if (sseq_size != int64_t{n_sseq} * n_emit_state) {
      return in.Error(absl::StrCat("senone sequences hold ", sseq_size, " ids, expected ", n_sseq, " x ", n_emit_state));
    }
    starts.resize(n_sseq + 1);
    for (int i = 0; i <= n_sseq; ++i) starts[i] = int64_t{i} * n_emit_state;
  } else {
    std::vector<int8_t> lengths;
    GMM_RETURN_IF_ERROR(in.ReadArray(n_sseq, "the senone sequence lengths", &lengths));
    starts.assign(n_sseq + 1, 0);
    for (int i = 0; i < n_sseq; ++i) starts[i + 1] = starts[i] + lengths[i];
    if (starts[n_sseq] != sseq_size) return in.Error("senone sequence lengths do not add up");
  }
  mdef.senone_base_phone.assign(mdef.num_senones, -1);
  for (int p = 0; p < n_phone; ++p) {
    for (int64_t j = starts[ssid[p]]; j < starts[ssid[p] + 1]; ++j) {
      const int senone = sseq[j];
      if (senone < 0 || senone >= mdef.num_senones) {
        return in.Error(absl::StrCat("phone ", p, " uses senone ", senone, " of ", mdef.num_senones));
      }
      if (mdef.senone_base_phone[senone] < 0) mdef.senone_base_phone[senone] = mdef.phones[p].base;
      mdef.phones[p].senones.push_back(senone);
    }
  }
  return mdef;
}

// --- sendump ---------------------------------------------------------------

absl::StatusOr<SphinxWeights> DecodeSendumpImpl(absl::string_view bytes, const std::string& name,
                                                int num_streams, int num_densities, int num_senones) {
  ByteReader in(bytes, name, false);
  GMM_ASSIGN_OR_RETURN(int32_t title_length, in.ReadInt32("the title length"));
  if (title_length < 1 || title_length > 999) {
    if (ByteReader::Swap(title_length) < 1 || ByteReader::Swap(title_length) > 999) {
      return in.ErrorAt(0, absl::StrCat("title length ", title_length, " is out of range in either byte order: not a sendump file"));
    }
    in.set_big_endian(true);
    title_length = ByteReader::Swap(title_length);
  }
  int clusters = 0, bits = 8;
  double log_base = 1.0001;
  int shift = 10;
  int32_t length = title_length;
  int strings_read = 0;
  while (true) {
    const int64_t at = in.offset();
    GMM_ASSIGN_OR_RETURN(const absl::string_view text, in.ReadBytes(length, "a header string"));
    // pocketsphinx requires the terminating NUL on the title and the
    // description only; later strings (en-us has "!!!") may lack it.
    const bool terminated = !text.empty() && text.back() == '\0';
    if (!terminated && strings_read < 2) return in.ErrorAt(at, "header string is not NUL-terminated");
    ++strings_read;
    const absl::string_view line = terminated ? text.substr(0, text.size() - 1) : text;
    std::vector<absl::string_view> words = absl::StrSplit(line, ' ');
    int value = 0;
    if (words.size() == 2 && absl::SimpleAtoi(words[1], &value)) {
      if (words[0] == "feature_count" && value != num_streams) {
        return in.ErrorAt(at, absl::StrCat("feature_count ", value, " but the means have ", num_streams, " streams"));
      }
      if (words[0] == "mixture_count" && value != num_densities) {
        return in.ErrorAt(at, absl::StrCat("mixture_count ", value, " but the means have ", num_densities, " densities"));
      }
      if (words[0] == "model_count" && value != num_senones) {
        return in.ErrorAt(at, absl::StrCat("model_count ", value, " but mdef has ", num_senones, " senones"));
      }
      if (words[0] == "cluster_count") clusters = value;
      if (words[0] == "cluster_bits") bits = value;
      if (words[0] == "mixw_shift") shift = value;
    }
    if (words.size() == 2 && words[0] == "logbase" && !absl::SimpleAtod(words[1], &log_base)) {
      return in.ErrorAt(at, "bad logbase");
    }
    GMM_ASSIGN_OR_RETURN(length, in.ReadInt32("a header string length"));
    if (length == 0) break;
    if (length < 0 || length > 4096) return in.Error(absl::StrCat("header string length ", length, " is out of range"));
  }
  if (!(clusters == 0 || clusters == 15 || clusters == 16)) return in.Error(absl::StrCat("cluster_count ", clusters, " is not 0, 15 or 16"));
  if (!(bits == 8 || bits == 4)) return in.Error(absl::StrCat("cluster_bits ", bits, " is not 4 or 8"));
  if (bits == 4 && clusters == 0) return absl::UnimplementedError(absl::StrCat(name, ": 4-bit weights without a cluster table"));
  if (!(log_base > 1.0) || shift < 0 || shift > 20) return in.Error("bad logbase or mixw_shift");
  int rows = num_densities, cols = num_senones;
  if (clusters == 0) {
    GMM_ASSIGN_OR_RETURN(rows, in.ReadInt32("the row count"));
    GMM_ASSIGN_OR_RETURN(cols, in.ReadInt32("the column count"));
    if (rows != num_densities || cols != num_senones) {
      return in.Error(absl::StrCat("weights are ", rows, " x ", cols, ", expected ", num_densities,
                                   " densities x ", num_senones, " senones"));
    }
  }
  std::vector<uint8_t> table(16);
  if (clusters > 0) {
    std::vector<uint8_t> read;
    GMM_RETURN_IF_ERROR(in.ReadArray(clusters == 15 ? 16 : clusters, "the cluster table", &read));
    table = read;
  }
  const int64_t row_bytes = bits == 4 ? (int64_t{cols} + 1) / 2 : cols;
  const int64_t needed = int64_t{num_streams} * rows * row_bytes;
  if (in.remaining() != needed) {
    if (in.remaining() < needed) return in.Truncated(absl::StrCat("the ", num_streams, " x ", rows, " x ", cols, " weights"));
    return in.Error(absl::StrCat(in.remaining() - needed, " unexpected bytes after the weights"));
  }
  GMM_ASSIGN_OR_RETURN(const absl::string_view data, in.ReadBytes(needed, "the weights"));
  SphinxWeights out;
  out.num_senones = num_senones;
  out.num_streams = num_streams;
  out.num_densities = num_densities;
  out.source = "sendump";
  out.quantisation_step = std::ldexp(std::log(log_base), shift);
  out.log_weights.resize(static_cast<size_t>(num_senones) * num_streams * num_densities);
  for (int f = 0; f < num_streams; ++f) {
    for (int g = 0; g < num_densities; ++g) {
      const unsigned char* row = reinterpret_cast<const unsigned char*>(data.data()) + (int64_t{f} * rows + g) * row_bytes;
      for (int s = 0; s < num_senones; ++s) {
        int q = bits == 8 ? row[s] : ((s & 1) ? row[s / 2] >> 4 : row[s / 2] & 0x0f);
        if (bits == 4) q = table[q];
        out.log_weights[(static_cast<size_t>(s) * num_streams + f) * num_densities + g] =
            static_cast<float>(-q * out.quantisation_step);
      }
    }
  }
  return out;
}

std::vector<std::string> StateNames(const SphinxMdef& mdef) {
  std::vector<std::string> names(mdef.num_senones);
  std::vector<int> seen(mdef.base_phones.size(), 0);
  for (int s = 0; s < mdef.num_senones; ++s) {
    const int base = mdef.senone_base_phone[s];
    names[s] = base < 0 ? absl::StrCat("senone", s) : absl::StrCat(mdef.base_phones[base], "_", seen[base]++);
  }
  return names;
}

// -svspec "0-12/13-25/26-38" must describe the streams' slices.
absl::Status CheckSvspec(const std::string& svspec, const std::vector<int>& dims, const std::string& name) {
  if (svspec.empty()) return absl::OkStatus();
  std::vector<std::string> parts = absl::StrSplit(svspec, '/');
  int expected = 0;
  bool contiguous = parts.size() == dims.size();
  for (size_t i = 0; contiguous && i < parts.size(); ++i) {
    std::vector<std::string> range = absl::StrSplit(parts[i], '-');
    int lo = 0, hi = 0;
    contiguous = range.size() == 2 && absl::SimpleAtoi(range[0], &lo) && absl::SimpleAtoi(range[1], &hi) &&
                 lo == expected && hi - lo + 1 == dims[i];
    expected = hi + 1;
  }
  if (!contiguous) {
    return absl::UnimplementedError(absl::StrCat(name, ": -svspec ", svspec,
                                                 " is not the contiguous in-order slices the means file's stream "
                                                 "lengths describe; only those are supported"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::string_view SphinxModelKindName(SphinxModelKind kind) {
  switch (kind) {
    case SphinxModelKind::kContinuous:
      return "continuous";
    case SphinxModelKind::kSemiContinuous:
      return "semi-continuous";
    case SphinxModelKind::kPhoneticallyTied:
      return "ptm";
  }
  return "unknown";
}

absl::StatusOr<SphinxGaussianFile> DecodeSphinxGaussianFile(absl::string_view bytes, const std::string& name) {
  ByteReader in(bytes, name, false);
  GMM_ASSIGN_OR_RETURN(const S3Header header, ReadS3Header(bytes, in));
  S3Body body(in);
  SphinxGaussianFile file;
  file.had_checksum = header.checksum;
  file.byte_swapped = in.swapping();
  GMM_ASSIGN_OR_RETURN(file.num_codebooks, body.Count("the codebook count"));
  GMM_ASSIGN_OR_RETURN(file.num_streams, body.Count("the stream count"));
  GMM_ASSIGN_OR_RETURN(file.num_densities, body.Count("the density count"));
  if (file.num_streams > 64) return in.Error(absl::StrCat(file.num_streams, " streams is implausible"));
  int64_t block = 0;
  for (int f = 0; f < file.num_streams; ++f) {
    GMM_ASSIGN_OR_RETURN(const int32_t dim, body.Count("a stream length"));
    file.stream_dims.push_back(dim);
    block += dim;
  }
  const int64_t at = in.offset();
  GMM_ASSIGN_OR_RETURN(const int32_t count, body.Count("the value count"));
  // In double: three counts up to 2^31 (and 64 streams) overflow int64. The
  // product is exact whenever it could equal an int32 count (found by fuzzing).
  const double expected = static_cast<double>(file.num_codebooks) * file.num_densities * static_cast<double>(block);
  if (count != expected) {
    return in.ErrorAt(at, absl::StrCat("value count ", count, " disagrees with the header: ", file.num_codebooks,
                                       " codebooks x ", file.num_densities, " densities x ", block, " dims = ", expected));
  }
  GMM_RETURN_IF_ERROR(body.Floats(count, "the Gaussian parameters", &file.values));
  GMM_RETURN_IF_ERROR(body.Finish(header.checksum));
  for (int64_t i = 0; i < count; ++i) {
    if (!std::isfinite(file.values[i])) {
      return in.ErrorAt(at + 4 + 4 * i, absl::StrCat("value ", i, " is not finite"));
    }
  }
  return file;
}

absl::StatusOr<SphinxGaussianFile> ReadSphinxGaussianFile(const std::string& path) {
  GMM_ASSIGN_OR_RETURN(const std::string bytes, ReadRequired(path, "Gaussian file"));
  return DecodeSphinxGaussianFile(bytes, absl::StrCat("Sphinx file '", path, "'"));
}

absl::StatusOr<SphinxWeights> DecodeSphinxMixtureWeights(absl::string_view bytes, const std::string& name,
                                                         float weight_floor) {
  ByteReader in(bytes, name, false);
  GMM_ASSIGN_OR_RETURN(const S3Header header, ReadS3Header(bytes, in));
  S3Body body(in);
  SphinxWeights out;
  out.source = "mixture_weights";
  GMM_ASSIGN_OR_RETURN(out.num_senones, body.Count("the senone count"));
  GMM_ASSIGN_OR_RETURN(out.num_streams, body.Count("the stream count"));
  GMM_ASSIGN_OR_RETURN(out.num_densities, body.Count("the density count"));
  const int64_t at = in.offset();
  GMM_ASSIGN_OR_RETURN(const int32_t count, body.Count("the value count"));
  // In double, as for the Gaussian files: the product can overflow int64.
  const double expected = static_cast<double>(out.num_senones) * out.num_streams * out.num_densities;
  if (count != expected) {
    return in.ErrorAt(at, absl::StrCat("value count ", count, " disagrees with the header: ", out.num_senones, " x ",
                                       out.num_streams, " x ", out.num_densities, " = ", expected));
  }
  std::vector<float> values;
  GMM_RETURN_IF_ERROR(body.Floats(count, "the mixture weights", &values));
  GMM_RETURN_IF_ERROR(body.Finish(header.checksum));
  // Normalise, floor, renormalise (pocketsphinx's read_mixw).
  out.log_weights.resize(values.size());
  const int n = out.num_densities;
  for (int64_t row = 0; row < expected / n; ++row) {
    float* w = &values[row * n];
    double sum = 0.0;
    for (int g = 0; g < n; ++g) {
      if (!std::isfinite(w[g]) || w[g] < 0.0f) {
        return in.ErrorAt(at + 4 + 4 * (row * n + g),
                          absl::StrCat("senone ", row / out.num_streams, ", stream ", row % out.num_streams,
                                       ": weight ", w[g], " is not a non-negative number"));
      }
      sum += w[g];
    }
    if (!(sum > 0.0)) {
      return in.Error(absl::StrCat("senone ", row / out.num_streams, ", stream ", row % out.num_streams,
                                   ": every weight is 0"));
    }
    double floored_sum = 0.0;
    for (int g = 0; g < n; ++g) floored_sum += std::max<double>(w[g] / sum, weight_floor);
    for (int g = 0; g < n; ++g) {
      out.log_weights[row * n + g] =
          static_cast<float>(std::log(std::max<double>(w[g] / sum, weight_floor) / floored_sum));
    }
  }
  return out;
}

absl::StatusOr<SphinxTransitions> DecodeSphinxTransitions(absl::string_view bytes, const std::string& name,
                                                          float floor) {
  ByteReader in(bytes, name, false);
  GMM_ASSIGN_OR_RETURN(const S3Header header, ReadS3Header(bytes, in));
  S3Body body(in);
  SphinxTransitions out;
  GMM_ASSIGN_OR_RETURN(out.num_tmats, body.Count("the matrix count"));
  GMM_ASSIGN_OR_RETURN(out.num_emit, body.Count("the source state count"));
  GMM_ASSIGN_OR_RETURN(const int32_t num_to, body.Count("the destination state count"));
  if (num_to != out.num_emit + 1) {
    return in.Error(absl::StrCat(out.num_emit, " source states but ", num_to, " destinations (expected one more)"));
  }
  const int64_t at = in.offset();
  GMM_ASSIGN_OR_RETURN(const int32_t count, body.Count("the value count"));
  const double expected = static_cast<double>(out.num_tmats) * out.num_emit * num_to;
  if (count != expected) {
    return in.ErrorAt(at, absl::StrCat("value count ", count, " disagrees with the header: ", out.num_tmats, " x ",
                                       out.num_emit, " x ", num_to, " = ", expected));
  }
  GMM_RETURN_IF_ERROR(body.Floats(count, "the transition probabilities", &out.probs));
  GMM_RETURN_IF_ERROR(body.Finish(header.checksum));
  for (int64_t row = 0; row < expected / num_to; ++row) {
    float* p = &out.probs[row * num_to];
    const int from = static_cast<int>(row % out.num_emit);
    double sum = 0.0;
    for (int to = 0; to < num_to; ++to) {
      if (!std::isfinite(p[to]) || p[to] < 0.0f || (to < from && p[to] != 0.0f)) {
        return in.Error(absl::StrCat("matrix ", row / out.num_emit, ", state ", from, " -> ", to, ": probability ",
                                     p[to], to < from ? " goes backwards (not left-to-right)" : " is not a probability"));
      }
      if (p[to] > 0.0f) p[to] = std::max(p[to], floor);
      sum += p[to];
    }
    if (!(sum > 0.0)) return in.Error(absl::StrCat("matrix ", row / out.num_emit, ", state ", from, " has no way out"));
    for (int to = 0; to < num_to; ++to) p[to] = static_cast<float>(p[to] / sum);
  }
  return out;
}

absl::StatusOr<SphinxTransitions> ReadSphinxTransitions(const std::string& path, float floor) {
  GMM_ASSIGN_OR_RETURN(const std::string bytes, ReadRequired(path, "transition matrices"));
  return DecodeSphinxTransitions(bytes, path, floor);
}

absl::StatusOr<SphinxWeights> ReadSphinxMixtureWeights(const std::string& path, float weight_floor) {
  GMM_ASSIGN_OR_RETURN(const std::string bytes, ReadRequired(path, "mixture weights"));
  return DecodeSphinxMixtureWeights(bytes, absl::StrCat("Sphinx file '", path, "'"), weight_floor);
}

absl::StatusOr<SphinxWeights> DecodeSphinxSendump(absl::string_view bytes, const std::string& name,
                                                  int num_streams, int num_densities, int num_senones) {
  return DecodeSendumpImpl(bytes, name, num_streams, num_densities, num_senones);
}

absl::StatusOr<SphinxWeights> ReadSphinxSendump(const std::string& path, int num_streams, int num_densities,
                                                int num_senones) {
  GMM_ASSIGN_OR_RETURN(const std::string bytes, ReadRequired(path, "sendump"));
  return DecodeSendumpImpl(bytes, absl::StrCat("Sphinx file '", path, "'"), num_streams, num_densities, num_senones);
}

absl::StatusOr<SphinxMdef> DecodeSphinxMdef(absl::string_view bytes, const std::string& name) {
  if (bytes.size() >= 4 && (bytes.substr(0, 4) == "BMDF" || bytes.substr(0, 4) == "FDMB")) {
    return DecodeBinaryMdef(bytes, name);
  }
  return DecodeTextMdef(bytes, name);
}

absl::StatusOr<SphinxMdef> ReadSphinxMdef(const std::string& path) {
  GMM_ASSIGN_OR_RETURN(const std::string bytes, ReadRequired(path, "mdef"));
  return DecodeSphinxMdef(bytes, absl::StrCat("Sphinx mdef '", path, "'"));
}

absl::StatusOr<SphinxFeatParams> ReadSphinxFeatParams(const std::string& path) {
  GMM_ASSIGN_OR_RETURN(const std::string bytes, ReadRequired(path, "feat.params"));
  return ParseSphinxFeatParams(bytes, path);
}

absl::StatusOr<SphinxFeatParams> ParseSphinxFeatParams(absl::string_view bytes, const std::string& path) {
  SphinxFeatParams params;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(bytes, '\n')) {
    ++line_number;
    std::vector<absl::string_view> words = absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
    if (words.empty() || words[0][0] == '#') continue;
    if (words.size() != 2 || words[0][0] != '-') {
      return absl::InvalidArgumentError(absl::StrCat("Sphinx feat.params '", path, "', line ", line_number,
                                                     ": expected \"-name value\", got \"", Quote(line), "\""));
    }
    params.values[std::string(words[0].substr(1))] = std::string(words[1]);
  }
  return params;
}

bool LooksLikeSphinxModelDirectory(const std::string& directory) {
  return FileExists(directory + "/mdef") && FileExists(directory + "/means");
}

absl::StatusOr<SphinxModel> ReadSphinxModel(const std::string& directory, const SphinxReadOptions& options) {
  struct stat info;
  if (::stat(directory.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
    return absl::NotFoundError(absl::StrCat("Sphinx model directory '", directory, "' does not exist"));
  }
  const std::string dir = directory + "/";
  if (FileExists(dir + "feature_transform")) {
    return absl::UnimplementedError(absl::StrCat("Sphinx model '", directory,
                                                 "' has an LDA/MLLT feature_transform, which is not supported"));
  }
  GMM_ASSIGN_OR_RETURN(SphinxMdef mdef, ReadSphinxMdef(dir + "mdef"));
  GMM_ASSIGN_OR_RETURN(const SphinxGaussianFile means, ReadSphinxGaussianFile(dir + "means"));
  GMM_ASSIGN_OR_RETURN(SphinxGaussianFile variances, ReadSphinxGaussianFile(dir + "variances"));
  const std::string where = absl::StrCat("Sphinx model '", directory, "'");
  if (means.num_codebooks != variances.num_codebooks || means.num_streams != variances.num_streams ||
      means.num_densities != variances.num_densities || means.stream_dims != variances.stream_dims) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": means (", means.num_codebooks, " x ", means.num_streams,
                                                   " x ", means.num_densities, ") and variances (",
                                                   variances.num_codebooks, " x ", variances.num_streams, " x ",
                                                   variances.num_densities, ") have different shapes"));
  }
  SphinxModelKind kind = SphinxModelKind::kContinuous;
  SphinxFeatParams feat_params;
  int floored_variances = 0;
  const int num_senones = mdef.num_senones;
  std::vector<int> senone_codebook(num_senones);
  if (means.num_codebooks == num_senones) {
    kind = SphinxModelKind::kContinuous;
    for (int s = 0; s < num_senones; ++s) senone_codebook[s] = s;
  } else if (means.num_codebooks == 1) {
    kind = SphinxModelKind::kSemiContinuous;
  } else if (means.num_codebooks == static_cast<int>(mdef.base_phones.size())) {
    kind = SphinxModelKind::kPhoneticallyTied;
    for (int s = 0; s < num_senones; ++s) {
      if (mdef.senone_base_phone[s] < 0) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": senone ", s, " belongs to no phone in mdef"));
      }
      senone_codebook[s] = mdef.senone_base_phone[s];
    }
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": ", means.num_codebooks, " codebooks fit none of the model shapes (1: semi-continuous, ",
        num_senones, " senones: continuous, ", mdef.base_phones.size(), " base phones: PTM)"));
  }
  if (FileExists(dir + "feat.params")) {
    GMM_ASSIGN_OR_RETURN(feat_params, ReadSphinxFeatParams(dir + "feat.params"));
    GMM_RETURN_IF_ERROR(CheckSvspec(feat_params.Get("svspec"), means.stream_dims, where));
  }
  const bool have_exact = FileExists(dir + "mixture_weights");
  const bool have_dump = FileExists(dir + "sendump");
  SphinxWeights weights;
  if (have_exact && (options.prefer_exact_weights || !have_dump)) {
    GMM_ASSIGN_OR_RETURN(weights, ReadSphinxMixtureWeights(dir + "mixture_weights", options.weight_floor));
  } else if (have_dump) {
    GMM_ASSIGN_OR_RETURN(weights, ReadSphinxSendump(dir + "sendump", means.num_streams, means.num_densities, num_senones));
  } else {
    return absl::NotFoundError(absl::StrCat(where, " has neither mixture_weights nor sendump"));
  }
  if (weights.num_senones != num_senones || weights.num_streams != means.num_streams ||
      weights.num_densities != means.num_densities) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", weights.source, " is ", weights.num_senones, " x ",
                                                   weights.num_streams, " x ", weights.num_densities,
                                                   " but mdef and means give ", num_senones, " senones x ",
                                                   means.num_streams, " streams x ", means.num_densities, " densities"));
  }

  std::vector<FeatureStream> streams;
  int offset = 0;
  for (const int dim : means.stream_dims) {
    streams.push_back({offset, dim});
    offset += dim;
  }
  TiedMixtureModelBuilder builder(streams);
  const int64_t block = offset;
  const int density = means.num_densities;
  std::vector<std::vector<double>> mean(means.num_streams), var(means.num_streams);
  for (int c = 0; c < means.num_codebooks; ++c) {
    std::vector<CodebookStreamParams> params;
    int64_t stream_start = int64_t{c} * density * block;
    for (int f = 0; f < means.num_streams; ++f) {
      const int64_t count = int64_t{density} * means.stream_dims[f];
      mean[f].assign(means.values.begin() + stream_start, means.values.begin() + stream_start + count);
      var[f].assign(variances.values.begin() + stream_start, variances.values.begin() + stream_start + count);
      for (double& v : var[f]) {
        if (v < options.variance_floor) {
          v = options.variance_floor;
          ++floored_variances;
        }
      }
      params.push_back({mean[f], var[f]});
      stream_start += count;
    }
    absl::StatusOr<int> added = builder.AddCodebook(params);
    if (!added.ok()) return PrefixStatus(where, added.status());
  }
  std::vector<std::vector<double>> log_w(means.num_streams, std::vector<double>(density));
  std::vector<absl::Span<const double>> spans(log_w.begin(), log_w.end());
  for (int s = 0; s < num_senones; ++s) {
    for (int f = 0; f < means.num_streams; ++f) {
      const float* w = &weights.log_weights[(static_cast<size_t>(s) * means.num_streams + f) * density];
      std::copy(w, w + density, log_w[f].begin());
    }
    if (absl::Status status = builder.AddState(senone_codebook[s], spans); !status.ok()) {
      return PrefixStatus(where, status);
    }
  }
  absl::StatusOr<TiedMixtureModel> model = std::move(builder).Build();
  if (!model.ok()) return PrefixStatus(where, model.status());
  std::vector<std::string> names = StateNames(mdef);
  return SphinxModel{.model = *std::move(model),
                     .kind = kind,
                     .mdef = std::move(mdef),
                     .feat_params = std::move(feat_params),
                     .weights_source = weights.source,
                     .quantisation_step = weights.quantisation_step,
                     .floored_variances = floored_variances,
                     .state_names = std::move(names)};
}

namespace {

void AppendWord(uint32_t word, std::string* out, uint32_t* sum) {
  out->append(reinterpret_cast<const char*>(&word), 4);
  *sum = ChecksumWords(*sum, &word, 1);
}

std::string S3Preamble() {
  std::string out = "s3\nversion 1.0\nchksum0 yes\nendhdr\n";
  const uint32_t magic = kByteOrderMagic;
  out.append(reinterpret_cast<const char*>(&magic), 4);
  return out;
}

}  // namespace

std::string EncodeSphinxGaussianFile(const SphinxGaussianFile& file) {
  std::string out = S3Preamble();
  uint32_t sum = 0;
  AppendWord(file.num_codebooks, &out, &sum);
  AppendWord(file.num_streams, &out, &sum);
  AppendWord(file.num_densities, &out, &sum);
  for (const int dim : file.stream_dims) AppendWord(dim, &out, &sum);
  AppendWord(static_cast<uint32_t>(file.values.size()), &out, &sum);
  for (const float v : file.values) {
    uint32_t word;
    std::memcpy(&word, &v, 4);
    AppendWord(word, &out, &sum);
  }
  out.append(reinterpret_cast<const char*>(&sum), 4);
  return out;
}

std::string EncodeSphinxTransitions(const SphinxTransitions& transitions) {
  // The same 3-d float array layout as mixture_weights.
  return EncodeSphinxMixtureWeights(transitions.num_tmats, transitions.num_emit, transitions.num_emit + 1,
                                    transitions.probs);
}

std::string EncodeSphinxMixtureWeights(int num_senones, int num_streams, int num_densities,
                                       const std::vector<float>& weights) {
  std::string out = S3Preamble();
  uint32_t sum = 0;
  AppendWord(num_senones, &out, &sum);
  AppendWord(num_streams, &out, &sum);
  AppendWord(num_densities, &out, &sum);
  AppendWord(static_cast<uint32_t>(weights.size()), &out, &sum);
  for (const float v : weights) {
    uint32_t word;
    std::memcpy(&word, &v, 4);
    AppendWord(word, &out, &sum);
  }
  out.append(reinterpret_cast<const char*>(&sum), 4);
  return out;
}

}  // namespace gmmscore
