#include "distributed/call_signature.h"

#include <algorithm>
#include <sstream>

#include <ATen/ops/empty.h>
#include <c10/util/Exception.h>

namespace torch_tpu::distributed {
namespace {

constexpr int64_t kMagic = 0x7470755f64697374;  // "tpu_dist": a foreign payload never matches
constexpr size_t kMaxDims = 8;
// magic, sequence, op, reduce_op, root, dtype, shape_checked, ndim, dims[kMaxDims]
constexpr size_t kWords = 8 + kMaxDims;
static_assert(kWords == kEncodedSignatureWords);

const char* reduce_op_name(int64_t op) {
  switch (op) {
    case 0: return "SUM";
    case 1: return "AVG";
    case 2: return "PRODUCT";
    case 3: return "MIN";
    case 4: return "MAX";
    case 5: return "BAND";
    case 6: return "BOR";
    case 7: return "BXOR";
    case 8: return "PREMUL_SUM";
    default: return "?";
  }
}

}  // namespace

at::Tensor encode(const CallSignature& signature) {
  at::Tensor encoded = at::empty({static_cast<int64_t>(kWords)}, at::kLong);
  int64_t* words = encoded.data_ptr<int64_t>();
  std::fill(words, words + kWords, 0);
  words[0] = kMagic;
  words[1] = static_cast<int64_t>(signature.sequence);
  words[2] = static_cast<int64_t>(signature.op);
  words[3] = signature.reduce_op;
  words[4] = signature.root;
  words[5] = static_cast<int64_t>(signature.dtype);
  words[6] = signature.shape_checked ? 1 : 0;
  words[7] = static_cast<int64_t>(signature.shape.size());
  // Shapes past kMaxDims dims fold their tail into the last word: still compared, less readable.
  for (size_t i = 0; i < signature.shape.size(); ++i) {
    const size_t slot = std::min(i, kMaxDims - 1);
    words[8 + slot] = i < kMaxDims - 1 ? signature.shape[i] : words[8 + slot] * 31 + signature.shape[i];
  }
  return encoded;
}

CallSignature decode(const at::Tensor& encoded) {
  const int64_t* words = encoded.data_ptr<int64_t>();
  CallSignature signature;
  signature.sequence = static_cast<uint64_t>(words[1]);
  signature.op = static_cast<c10d::OpType>(words[2]);
  signature.reduce_op = words[3];
  signature.root = words[4];
  signature.dtype = static_cast<c10::ScalarType>(words[5]);
  signature.shape_checked = words[6] != 0;
  const size_t ndim = std::min(static_cast<size_t>(words[7]), kMaxDims);
  signature.shape.assign(words + 8, words + 8 + ndim);
  return signature;
}

std::string describe(const CallSignature& signature) {
  std::ostringstream text;
  text << c10d::opTypeToString(signature.op);
  if (signature.reduce_op >= 0) text << "(" << reduce_op_name(signature.reduce_op) << ")";
  if (signature.root >= 0) text << " from/to root " << signature.root;
  text << " of " << c10::toString(signature.dtype);
  if (signature.shape_checked) {
    text << "[";
    for (size_t i = 0; i < signature.shape.size(); ++i) text << (i ? ", " : "") << signature.shape[i];
    text << "]";
  }
  text << " (collective #" << signature.sequence << ")";
  return text.str();
}

void check_agreement(const CallSignature& mine, int my_rank, const std::vector<at::Tensor>& all) {
  const at::Tensor own = encode(mine);
  for (size_t rank = 0; rank < all.size(); ++rank) {
    if (static_cast<int>(rank) == my_rank) continue;
    const at::Tensor& theirs = all[rank];
    const bool same = theirs.numel() == own.numel() &&
                      std::equal(own.data_ptr<int64_t>(), own.data_ptr<int64_t>() + own.numel(),
                                 theirs.data_ptr<int64_t>());
    if (same) continue;
    TORCH_CHECK_WITH(DistBackendError, theirs.data_ptr<int64_t>()[0] == kMagic,
                     "tpu_dist: ranks disagree on the collective: rank ", my_rank, " called ",
                     describe(mine), ", rank ", rank, " sent an unrecognisable call description");
    TORCH_CHECK_WITH(DistBackendError, false,
                     "tpu_dist: ranks disagree on the collective: rank ", my_rank, " called ",
                     describe(mine), " but rank ", rank, " called ", describe(decode(theirs)),
                     ". Every rank must call the same collectives in the same order, with the "
                     "same dtypes and shapes.");
  }
}

}  // namespace torch_tpu::distributed
