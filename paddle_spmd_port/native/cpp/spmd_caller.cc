// spmd_caller: calls Paddle's exported SPMD rule functions directly, one case per line.
//
// Built on demand by paddle_spmd_port/native/compiled.py against the installed wheel's
// headers (paddle/include) and libraries (paddle/libs/libphi_core.so, libcommon.so). Which rules
// it calls is not written here: compiled.py generates two includes from the op families' declared
// specs (spmd_caller_headers.inc: the rule headers; spmd_caller_rules.inc: kRuleTable, one entry
// per rule key). Tensors are passed as const DistMetaTensor& (a missing optional one as Paddle's
// stand-in, shape [0]), attributes by their declared kind; a function that takes its parameters
// otherwise (another count, paddle::optional, a vector of tensors) answers "U" with the entry's reason.
//
// Protocol (stdin -> stdout, one line each, whitespace-separated tokens; strings are hex
// encoded, "-" for an empty string):
//
//   request   <rule> <isolate 0|1> <n_tensors> <tensor>... <n_attrs> <attr>...
//     tensor  "-"                                   a missing optional input
//             "T" <rank> <dim>... <n_dm> <m>... <n_partial> <p>... <mesh>
//             "M" <rank> <dim>... <n_axes> (<n_members> <m>...)... <n_partial> <p>... <mesh>
//                                                   co-sharded: mesh dims per axis, in order
//     mesh    "-"                                   no process mesh
//             <ndim> <size>... <n_ids> <id>... <name_hex>...
//     attr    "b" 0|1 | "i" <int> | "f" <float> | "s" <hex>
//
//   reply     "R" <n_in> <attr>... <n_out> <attr>...  the rule's answer
//     attr    "A" <mesh> <n_dm> <m>... <n_partial> (<p> <reduce_type>)...
//             "Q" <mesh> <n_axes> (<n_members> <m>...)... <n_partial> (<p> <reduce_type>)...
//                                                    an answer that holds a co-shard; an attr's
//                                                    tokens are joined by "," (one word per attr,
//                                                    so the client can look each attr up whole)
//             "V" <n> <attr>...                      a vector of attrs
//             "E" <python_exception_name> <hex message>   the rule raised
//             "U" <hex reason>                       this caller cannot express the case
//             "C" <signal>                           an isolated case killed its child
//
// Batches: the client may write any number of requests ahead (a whole slice of cases in one
// write); the program reads stdin in large blocks and loops over the cases in order, with no
// round trip per case. Each reply is written (one write(2), unbuffered) before the next case
// starts, so if a case kills the program, every earlier case has its reply and the first
// unanswered request is the case in flight: the client records it as a crash and starts a new
// program for the rest. The program exits 0 at the end of its input.
//
// With isolate=1 the case runs in a fork()ed child of the fork server (a copy of the program in
// its start-up state: see Zygote), so a segfault in Paddle costs one fork, and the case's outcome
// does not depend on the cases run before it. Arguments: --isolating (isolated cases will come:
// fork the server at start-up), --serve-isolated (run as that server; used by the program itself).
// Other inputs are built once per distinct request text and reused (InputCache).
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>  // before Paddle's headers: 2.6's dist_attr.h uses std::set without including it
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "paddle/common/enforce.h"
#include "paddle/phi/core/distributed/auto_parallel/dist_attr.h"
#include "paddle/phi/core/distributed/auto_parallel/dist_meta_tensor.h"
#include "paddle/phi/core/distributed/auto_parallel/process_mesh.h"
#include "paddle/phi/core/distributed/type_defs.h"
// The rule headers this Paddle has, generated from the op families' specs (compiled.py).
#include "spmd_caller_headers.inc"

namespace pd = phi::distributed;

// Where Paddle's error type lives: common::enforce from 3.0 on; Paddle 2.6 keeps it in phi::enforce
// (compiled.py defines SPMD_CALLER_PHI_ENFORCE when it builds against a 2.6 wheel).
#ifdef SPMD_CALLER_PHI_ENFORCE
using PaddleError = phi::enforce::EnforceNotMet;
#else
using PaddleError = common::enforce::EnforceNotMet;
#endif

namespace {

struct Unreachable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string hex_encode(const std::string& text) {
  if (text.empty()) return "-";
  static const char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size() * 2);
  for (unsigned char c : text) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

std::string hex_decode(std::string_view token) {
  if (token == "-") return "";
  std::string out;
  out.reserve(token.size() / 2);
  for (size_t i = 0; i + 1 < token.size(); i += 2) {
    unsigned value = 0;
    auto [end, ec] = std::from_chars(token.data() + i, token.data() + i + 2, value, 16);
    if (ec != std::errc() || end != token.data() + i + 2) throw Unreachable("bad hex token " + std::string(token));
    out.push_back(static_cast<char>(value));
  }
  return out;
}

// Whitespace-separated tokens of one request line, read in place (no copies, no streams).
class Tokens {
 public:
  explicit Tokens(std::string_view line) : p_(line.data()), end_(line.data() + line.size()) {}
  std::string_view word() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\r')) ++p_;
    if (p_ == end_) throw Unreachable("request line ended early");
    const char* start = p_;
    while (p_ < end_ && *p_ != ' ' && *p_ != '\t' && *p_ != '\r') ++p_;
    return std::string_view(start, static_cast<size_t>(p_ - start));
  }
  int64_t integer() {
    std::string_view w = word();
    int64_t value = 0;
    auto [end, ec] = std::from_chars(w.data(), w.data() + w.size(), value);
    if (ec == std::errc::result_out_of_range) {  // a size Paddle cannot hold is no question to ask it
      throw Unreachable(std::string(w) + " is beyond the int64 Paddle holds sizes, mesh dims and ids in");
    }
    if (ec != std::errc() || end != w.data() + w.size()) throw Unreachable("bad integer token " + std::string(w));
    return value;
  }
  std::vector<int64_t> ints(int64_t n) {
    if (n < 0) throw Unreachable("negative count in the request");
    std::vector<int64_t> v;
    v.reserve(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v.push_back(integer());
    return v;
  }
  void skip_ints(int64_t n) {  // ints(n), read and checked alike, not kept
    if (n < 0) throw Unreachable("negative count in the request");
    for (int64_t i = 0; i < n; ++i) integer();
  }
  // Where the next word starts (after the blanks before it).
  const char* next_start() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\r')) ++p_;
    return p_;
  }
  const char* pos() const { return p_; }

 private:
  const char* p_;
  const char* end_;
};

struct Attr {
  char type;
  std::string text;
};

// Co-shards (one tensor axis over several mesh dims) need TensorDistAttr's nested dims_mapping
// (Paddle 3.2 and later); on a build without it, a co-sharded input is unreachable and answers
// are read one mesh dim per axis. Chosen at compile time, so one source builds on every release.
template <typename A>
auto set_multi(A* attr, const std::vector<std::vector<int64_t>>& multi, int)
    -> decltype(attr->set_dims_mapping(multi), void()) {
  attr->set_dims_mapping(multi);
}
template <typename A>
void set_multi(A*, const std::vector<std::vector<int64_t>>&, long) {
  throw Unreachable("this Paddle build's TensorDistAttr holds one mesh dim per axis (no co-shard)");
}
template <typename A>
auto has_coshard(const A& attr, int) -> decltype(attr.multi_dims_mapping().size(), bool()) {
  const std::vector<std::vector<int64_t>>& multi = attr.multi_dims_mapping();
  for (const auto& axis : multi) {
    if (axis.size() > 1) return true;
  }
  return false;
}
template <typename A>
bool has_coshard(const A&, long) {
  return false;
}
template <typename Out, typename A>
auto write_multi(Out* out, const A& attr, int) -> decltype(attr.multi_dims_mapping().size(), void()) {
  const std::vector<std::vector<int64_t>>& multi = attr.multi_dims_mapping();
  out->number(static_cast<int64_t>(multi.size()));
  for (const auto& axis : multi) {
    out->number(static_cast<int64_t>(axis.size()));
    for (int64_t m : axis) out->number(m);
  }
}
template <typename Out, typename A>
void write_multi(Out*, const A&, long) {}

pd::DistMetaTensor read_tensor(Tokens* t) {
  std::string_view head = t->word();
  if (head == "-") {  // Paddle's stand-in for a missing optional tensor: shape [0], empty attr
    return pd::DistMetaTensor(common::make_ddim({0}), pd::TensorDistAttr());
  }
  if (head != "T" && head != "M") throw Unreachable("bad tensor token " + std::string(head));
  std::vector<int64_t> shape = t->ints(t->integer());
  std::vector<int64_t> dims_mapping;
  std::vector<std::vector<int64_t>> multi;
  if (head == "T") {
    dims_mapping = t->ints(t->integer());
  } else {
    int64_t n_axes = t->integer();
    for (int64_t i = 0; i < n_axes; ++i) multi.push_back(t->ints(t->integer()));
  }
  std::vector<int64_t> partial = t->ints(t->integer());
  pd::TensorDistAttr attr;
  std::string_view mesh_head = t->word();
  if (mesh_head != "-") {
    int64_t ndim = 0;
    auto [end, ec] = std::from_chars(mesh_head.data(), mesh_head.data() + mesh_head.size(), ndim);
    if (ec != std::errc() || end != mesh_head.data() + mesh_head.size() || ndim < 0) {
      throw Unreachable("bad mesh token " + std::string(mesh_head));
    }
    std::vector<int64_t> mesh_shape = t->ints(ndim);
    std::vector<int64_t> ids = t->ints(t->integer());
    std::vector<std::string> names;
    names.reserve(static_cast<size_t>(ndim));
    for (int64_t i = 0; i < ndim; ++i) names.push_back(hex_decode(t->word()));
    attr.set_process_mesh(pd::ProcessMesh(mesh_shape, ids, names));
  }
  if (head == "T") {
    attr.set_dims_mapping(dims_mapping);
  } else {
    set_multi(&attr, multi, 0);
  }
  if (!partial.empty()) attr.set_partial_status(partial);
  return pd::DistMetaTensor(common::make_ddim(shape), attr);
}

// The request text of the next tensor, read as read_tensor() reads it (the same checks, in the
// same order, so a malformed tensor fails alike) but with nothing built.
std::string_view tensor_text(Tokens* t) {
  const char* start = t->next_start();
  std::string_view head = t->word();
  if (head != "-") {
    if (head != "T" && head != "M") throw Unreachable("bad tensor token " + std::string(head));
    t->skip_ints(t->integer());
    if (head == "T") {
      t->skip_ints(t->integer());
    } else {
      int64_t n_axes = t->integer();
      for (int64_t i = 0; i < n_axes; ++i) t->skip_ints(t->integer());
    }
    t->skip_ints(t->integer());
    std::string_view mesh_head = t->word();
    if (mesh_head != "-") {
      int64_t ndim = 0;
      auto [end, ec] = std::from_chars(mesh_head.data(), mesh_head.data() + mesh_head.size(), ndim);
      if (ec != std::errc() || end != mesh_head.data() + mesh_head.size() || ndim < 0) {
        throw Unreachable("bad mesh token " + std::string(mesh_head));
      }
      t->skip_ints(ndim);
      t->skip_ints(t->integer());
      for (int64_t i = 0; i < ndim; ++i) t->word();
    }
  }
  return std::string_view(start, static_cast<size_t>(t->pos() - start));
}

// Built inputs by their request text: a grid repeats a few thousand distinct tensors over
// hundreds of thousands of cases, and building one (ProcessMesh, TensorDistAttr) costs more than
// the lookup. The rules take their inputs by const reference and copy what they keep, so a cached
// input is never changed. Only the program's own loop uses it: a forked child (isolated cases)
// builds its inputs afresh, from the zygote's state (see Zygote).
class InputCache {
 public:
  const pd::DistMetaTensor& get(std::string_view text) {
    auto found = map_.find(text);
    if (found != map_.end()) return found->second->tensor;
    Tokens t(text);
    std::unique_ptr<Entry> entry(new Entry{std::string(text), read_tensor(&t)});
    const pd::DistMetaTensor& tensor = entry->tensor;
    std::string_view key(entry->text);  // the entry's own copy: stable while the entry lives
    map_.emplace(key, std::move(entry));
    return tensor;
  }
  // Between requests only: every reference handed out is dropped with it.
  void trim() {
    if (map_.size() > 50000) map_.clear();
  }

 private:
  struct Entry {
    std::string text;  // the key's storage
    pd::DistMetaTensor tensor;
  };
  std::unordered_map<std::string_view, std::unique_ptr<Entry>> map_;
};

// The inputs of one call, by reference (cached or built for this call).
class Inputs {
 public:
  void reserve(size_t n) {
    refs_.reserve(n);
    own_.reserve(n);
  }
  void add(const pd::DistMetaTensor& tensor) { refs_.push_back(&tensor); }
  void add_own(pd::DistMetaTensor tensor) {
    own_.push_back(std::make_unique<pd::DistMetaTensor>(std::move(tensor)));
    refs_.push_back(own_.back().get());
  }
  size_t size() const { return refs_.size(); }
  const pd::DistMetaTensor& operator[](size_t i) const { return *refs_[i]; }

 private:
  std::vector<const pd::DistMetaTensor*> refs_;
  std::vector<std::unique_ptr<pd::DistMetaTensor>> own_;
};

Attr read_attr(Tokens* t) {
  std::string_view type = t->word();
  if (type.size() != 1 || std::string_view("bifs").find(type[0]) == std::string_view::npos) {
    throw Unreachable("bad attribute type " + std::string(type));
  }
  return Attr{type[0], std::string(t->word())};
}

// Typed access to the request's attributes, checked like Paddle's InferSpmdContext does.
class Attrs {
 public:
  Attrs(std::vector<Attr> attrs, std::string rule) : attrs_(std::move(attrs)), rule_(std::move(rule)) {}
  void expect(size_t n) const {
    if (attrs_.size() != n) {
      throw Unreachable(rule_ + " takes " + std::to_string(n) + " attributes, got " + std::to_string(attrs_.size()));
    }
  }
  bool boolean(size_t i) const { return whole(i, 'b') != 0; }
  int integer(size_t i) const { return whole(i, 'i'); }
  float real(size_t i) const { return std::strtof(get(i, 'f').text.c_str(), nullptr); }
  std::string text(size_t i) const { return hex_decode(get(i, 's').text); }

 private:
  // std::stoi would throw out_of_range for an int beyond int32, which reads as Paddle's IndexError:
  // a false error held against the port. Paddle's bindings cannot take such an attribute at all.
  int whole(size_t i, char type) const {
    const std::string& w = get(i, type).text;
    int value = 0;
    auto [end, ec] = std::from_chars(w.data(), w.data() + w.size(), value);
    if (ec == std::errc::result_out_of_range) {
      throw Unreachable(rule_ + " attribute " + std::to_string(i) + ": " + w +
                        " is beyond the int32 (C++ int) Paddle holds it in");
    }
    if (ec != std::errc() || end != w.data() + w.size()) throw Unreachable("bad integer attribute " + w);
    return value;
  }
  const Attr& get(size_t i, char type) const {
    if (attrs_[i].type != type) {
      throw Unreachable(rule_ + " attribute " + std::to_string(i) + " must have type " + type + ", got " +
                        attrs_[i].type);
    }
    return attrs_[i];
  }
  std::vector<Attr> attrs_;
  std::string rule_;
};

// One rule the program can call: its key, how many tensors and attributes it takes, and the call.
struct RuleEntry {
  const char* key;
  size_t n_tensors;
  size_t n_attrs;
  pd::SpmdInfo (*call)(const Inputs&, const Attrs&);
};

// kRuleTable: one entry per rule key whose function this Paddle's headers declare, generated from
// the op families' specs (compiled.py, generated_sources); nullptr-keyed at the end.
#include "spmd_caller_rules.inc"

// The table by key, built at start-up (before the fork server is forked: its children inherit it).
class RuleIndex {
 public:
  RuleIndex() {
    for (const RuleEntry* e = kRuleTable; e->key != nullptr; ++e) map_.emplace(e->key, e);
  }
  const RuleEntry* find(const std::string& rule) const {
    auto found = map_.find(rule);
    return found == map_.end() ? nullptr : found->second;
  }

 private:
  std::unordered_map<std::string_view, const RuleEntry*> map_;
};
const RuleIndex kRules;

pd::SpmdInfo call_rule(const std::string& rule, const Inputs& in, const Attrs& a) {
  const RuleEntry* entry = kRules.find(rule);
  if (entry == nullptr) throw Unreachable("Paddle exports no C++ rule for " + rule);
  if (in.size() != entry->n_tensors) {
    throw Unreachable(rule + " takes " + std::to_string(entry->n_tensors) + " tensors, got " +
                      std::to_string(in.size()));
  }
  a.expect(entry->n_attrs);
  return entry->call(in, a);
}

// The reply under construction: tokens appended in place (no streams).
class Reply {
 public:
  Reply& word(std::string_view w) {
    text_.push_back(sep_);
    text_.append(w);
    return *this;
  }
  Reply& number(int64_t v) {
    char buf[24];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    (void)ec;
    text_.push_back(sep_);
    text_.append(buf, static_cast<size_t>(end - buf));
    return *this;
  }
  std::string take() { return std::move(text_); }
  void start(std::string_view kind) { text_.assign(kind); }
  void joined(bool on) { sep_ = on ? ',' : ' '; }  // the tokens of one attr: one word

 private:
  std::string text_;
  char sep_ = ' ';
};

void write_attr(Reply* out, const pd::TensorDistAttr& attr) {
  const bool coshard = has_coshard(attr, 0);
  out->word(coshard ? "Q" : "A");
  out->joined(true);
  const pd::ProcessMesh& mesh = attr.process_mesh();
  if (mesh.empty()) {
    out->word("-");
  } else {
    out->number(static_cast<int64_t>(mesh.shape().size()));
    for (int64_t s : mesh.shape()) out->number(s);
    out->number(static_cast<int64_t>(mesh.process_ids().size()));
    for (int64_t id : mesh.process_ids()) out->number(id);
    for (const std::string& name : mesh.dim_names()) out->word(hex_encode(name));
  }
  if (coshard) {
    write_multi(out, attr, 0);
  } else {
    out->number(static_cast<int64_t>(attr.dims_mapping().size()));
    for (int64_t m : attr.dims_mapping()) out->number(m);
  }
  const auto& partial = attr.partial_status();
  out->number(static_cast<int64_t>(partial.size()));
  for (const auto& kv : partial) out->number(kv.first).number(static_cast<int>(kv.second));
  out->joined(false);
}

void write_arg(Reply* out, const pd::ArgDistAttr& arg) {
  if (paddle::holds_alternative<pd::TensorDistAttr>(arg)) {
    write_attr(out, paddle::get<pd::TensorDistAttr>(arg));
    return;
  }
  const auto& list = paddle::get<std::vector<pd::TensorDistAttr>>(arg);
  out->word("V").number(static_cast<int64_t>(list.size()));
  for (const auto& attr : list) write_attr(out, attr);
}

// Paddle's pybind layer turns an error code into this Python exception.
const char* python_exception(common::ErrorCode code) {
  switch (code) {
    case common::ErrorCode::INVALID_ARGUMENT:
      return "ValueError";
    case common::ErrorCode::OUT_OF_RANGE:
      return "IndexError";
    case common::ErrorCode::RESOURCE_EXHAUSTED:
      return "MemoryError";
    case common::ErrorCode::UNIMPLEMENTED:
      return "NotImplementedError";
    case common::ErrorCode::FATAL:
      return "SystemError";
    case common::ErrorCode::EXTERNAL:
      return "OSError";
#ifndef SPMD_CALLER_PHI_ENFORCE  // (2.6 has no INVALID_TYPE code)
    case common::ErrorCode::INVALID_TYPE:
      return "TypeError";
#endif
    default:
      return "RuntimeError";
  }
}

// The reply to one request; ``cache`` null: every input built afresh.
std::string answer(std::string_view line, InputCache* cache) {
  Reply out;
  try {
    Tokens t(line);
    std::string rule(t.word());
    t.word();  // isolate flag, handled by the caller
    int64_t n_tensors = t.integer();
    if (n_tensors < 0) throw Unreachable("negative tensor count");
    Inputs tensors;
    tensors.reserve(static_cast<size_t>(n_tensors));
    for (int64_t i = 0; i < n_tensors; ++i) {
      if (cache != nullptr) {
        tensors.add(cache->get(tensor_text(&t)));
      } else {
        tensors.add_own(read_tensor(&t));
      }
    }
    int64_t n_attrs = t.integer();
    if (n_attrs < 0) throw Unreachable("negative attribute count");
    std::vector<Attr> attrs;
    attrs.reserve(static_cast<size_t>(n_attrs));
    for (int64_t i = 0; i < n_attrs; ++i) attrs.push_back(read_attr(&t));
    pd::SpmdInfo info = call_rule(rule, tensors, Attrs(std::move(attrs), rule));
    out.start("R");
    out.number(static_cast<int64_t>(info.first.size()));
    for (const auto& arg : info.first) write_arg(&out, arg);
    out.number(static_cast<int64_t>(info.second.size()));
    for (const auto& arg : info.second) write_arg(&out, arg);
  } catch (const Unreachable& e) {
    return std::string("U ") + hex_encode(e.what());
  } catch (const PaddleError& e) {
    return std::string("E ") + python_exception(e.code()) + " " + hex_encode(e.what());
  } catch (const std::length_error& e) {  // pybind11's translations of the std exceptions
    return std::string("E ValueError ") + hex_encode(e.what());
  } catch (const std::out_of_range& e) {
    return std::string("E IndexError ") + hex_encode(e.what());
  } catch (const std::invalid_argument& e) {
    return std::string("E ValueError ") + hex_encode(e.what());
  } catch (const std::exception& e) {
    return std::string("E RuntimeError ") + hex_encode(e.what());
  }
  return out.take();
}

// write(2) all of it (a reply must be out before the next case starts: see "Batches").
bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// A forked child's part of an isolated case: answer it, write the reply to fd, exit. Crashes end it
// by their signal (the parent reports it), with no core file.
[[noreturn]] void run_child(std::string_view line, int fd) {
  struct rlimit no_core = {0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  for (int sig : {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL}) signal(sig, SIG_DFL);
  std::string reply = answer(line, nullptr) + "\n";
  write_all(fd, reply.data(), reply.size());
  _exit(0);
}

// An isolated case: fork a child that answers it (run_child) and read its reply into buf (at most cap
// bytes), allocating nothing in this process (the fork server must not: see Zygote::serve). The reply
// without its newline; "C <signal>" if the child died, "U ..." if no child could run it.
size_t answer_isolated_into(std::string_view line, char* buf, size_t cap) {
  auto put = [&](std::string_view text) {
    size_t n = text.size() < cap ? text.size() : cap;
    std::memcpy(buf, text.data(), n);
    return n;
  };
  int fds[2];
  if (pipe(fds) != 0) return put("U 706970652829206661696c6564");  // "pipe() failed"
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return put("U 666f726b2829206661696c6564");  // "fork() failed"
  }
  if (pid == 0) {
    close(fds[0]);
    run_child(line, fds[1]);
  }
  close(fds[1]);
  size_t got = 0;
  bool overflow = false;
  for (;;) {
    char sink[4096];
    char* to = got < cap ? buf + got : sink;
    size_t room = got < cap ? cap - got : sizeof sink;
    ssize_t n = read(fds[0], to, room);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (to == sink) overflow = true;
    else got += static_cast<size_t>(n);
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    char text[32];
    int n = std::snprintf(text, sizeof text, "C %d", WTERMSIG(status));
    return put(std::string_view(text, static_cast<size_t>(n)));
  }
  if (overflow) return put("U 7265706c7920746f6f206c6f6e67");  // "reply too long"
  if (got == 0) return put("C 0");
  if (buf[got - 1] == '\n') --got;
  return got;
}

// The same, for the program itself when no fork server answers (its reply as a string).
std::string answer_isolated(std::string_view line) {
  static char buf[1 << 20];
  return std::string(buf, answer_isolated_into(line, buf, sizeof buf - 1));
}

// A file descriptor (stdin by default) in large blocks, one complete line at a time.
class LineReader {
 public:
  explicit LineReader(int fd = 0) : fd_(fd) {}
  bool next(std::string_view* line) {
    for (;;) {
      size_t nl = buf_.find('\n', pos_);
      if (nl != std::string::npos) {
        *line = std::string_view(buf_.data() + pos_, nl - pos_);
        pos_ = nl + 1;
        return true;
      }
      if (eof_) {
        if (pos_ >= buf_.size()) return false;
        *line = std::string_view(buf_.data() + pos_, buf_.size() - pos_);  // a last line without '\n'
        pos_ = buf_.size();
        return true;
      }
      buf_.erase(0, pos_);  // the views handed out so far are no longer used
      pos_ = 0;
      size_t old = buf_.size();
      buf_.resize(old + (1 << 16));
      ssize_t n = read(fd_, &buf_[old], 1 << 16);
      while (n < 0 && errno == EINTR) n = read(fd_, &buf_[old], 1 << 16);
      buf_.resize(old + static_cast<size_t>(n > 0 ? n : 0));
      if (n <= 0) eof_ = true;
    }
  }

 private:
  int fd_;
  std::string buf_;
  size_t pos_ = 0;
  bool eof_ = false;
};

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25  // Linux 6.1; older kernels refuse it (EINVAL), which changes nothing
#endif

// The heap in transparent huge pages where the kernel can: a fork then copies a page table entry
// per 2 MB of heap instead of one per 4 kB (the heap is ~27 MB of Paddle's registries before the
// first case). The heap's contents and layout stay as they are.
void collapse_heap() {
  FILE* maps = std::fopen("/proc/self/maps", "r");
  if (maps == nullptr) return;
  char text[512];
  while (std::fgets(text, sizeof text, maps) != nullptr) {
    if (std::string_view(text).find("[heap]") == std::string_view::npos) continue;
    unsigned long start = 0, end = 0;
    if (std::sscanf(text, "%lx-%lx", &start, &end) != 2) break;
    const unsigned long huge = 2ul << 20;
    start = (start + huge - 1) & ~(huge - 1);
    end &= ~(huge - 1);
    if (end > start) madvise(reinterpret_cast<void*>(start), end - start, MADV_COLLAPSE);
    break;
  }
  std::fclose(maps);
}

// The fork server of the isolated cases: a copy of the program in its start-up state, before any
// case, that forks a child per isolated case (answer_isolated) and hands back its reply. So an
// isolated case always runs on the same fresh state, whatever ran before it in the program (a heap
// that some rules corrupt without dying gives one outcome, not one per history), and the program's
// own grown heap (its input cache) is never copied. With --isolating the program forks the server
// at start-up (the client says so when isolated cases will come); otherwise it starts one when the
// first isolated case comes, as a fresh run of this binary (--serve-isolated: the same start-up
// state, reached by exec instead). If the server is gone, the program forks the child itself.
class Zygote {
 public:
  static constexpr int kRequests = 3, kReplies = 4;  // the server's ends, as an exec'd server has them

  // fresh: exec a new copy of the binary (after cases ran here); else fork this one (at start-up).
  void start(bool fresh) {
    started_ = true;
    int requests[2], replies[2];
    if (pipe(requests) != 0) return;
    if (pipe(replies) != 0) {
      close(requests[0]);
      close(requests[1]);
      return;
    }
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) {
      for (int fd : {requests[0], requests[1], replies[0], replies[1]}) close(fd);
      return;
    }
    if (pid == 0) {
      close(requests[1]);
      close(replies[0]);
      // hold none of the program's pipes (its reader waits for their EOF)
      int in = fcntl(requests[0], F_DUPFD, 10), out = fcntl(replies[1], F_DUPFD, 10);
      close(requests[0]);
      close(replies[1]);
      int devnull = open("/dev/null", O_RDWR);
      if (in < 0 || out < 0 || devnull < 0) _exit(127);
      dup2(devnull, 0);
      dup2(devnull, 1);
      close(devnull);
      if (dup2(in, kRequests) < 0 || dup2(out, kReplies) < 0) _exit(127);
      close(in);
      close(out);
      if (fresh) {
        setenv("LD_BIND_NOW", "1", 1);  // resolve every symbol once here, not in each child
        char self[] = "/proc/self/exe", flag[] = "--serve-isolated";
        char* argv[] = {self, flag, nullptr};
        execv(self, argv);
        _exit(127);
      }
      serve(parent);
    }
    close(requests[0]);
    close(replies[1]);
    pid_ = pid;
    to_ = requests[1];
    from_ = replies[0];
    reader_ = std::make_unique<LineReader>(from_);
  }

  // The isolated case's reply; false when there is no server (the caller answers it itself).
  bool answer(std::string_view line, std::string* reply) {
    if (!started_) start(true);
    if (to_ < 0) return false;
    std::string request(line);
    request.push_back('\n');
    std::string_view got;
    if (write_all(to_, request.data(), request.size()) && reader_->next(&got)) {
      reply->assign(got.data(), got.size());
      return true;
    }
    close(to_);
    close(from_);
    to_ = from_ = -1;
    while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
    return false;
  }

  // The server's loop: requests on fd kRequests, replies on fd kReplies, until the program is gone.
  // It allocates nothing between forks: a request is read into, and copied to, buffers of fixed
  // place and size, and a child's reply read into another. A heap the loop touched (a buffer grown,
  // a reply string freed into malloc's caches) would differ from case to case by what came before,
  // and a rule reading memory it never set would answer by that history.
  [[noreturn]] static void serve(pid_t parent) {
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlives the program
#endif
    if (getppid() != parent) _exit(0);
    static char in[kBuffer], request[kBuffer], reply[kBuffer];
    size_t have = 0;
    bool collapsed = false, eof = false;
    for (;;) {
      char* nl = static_cast<char*>(std::memchr(in, '\n', have));
      if (nl == nullptr) {
        if (eof) _exit(0);
        if (have == kBuffer) _exit(0);  // a request longer than the buffer: end; the caller answers itself
        ssize_t n = read(kRequests, in + have, kBuffer - have);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) eof = true;
        else have += static_cast<size_t>(n);
        continue;
      }
      const size_t len = static_cast<size_t>(nl - in);
      std::memcpy(request, in, len);
      std::memmove(in, nl + 1, have - len - 1);
      have -= len + 1;
      if (!collapsed) {  // on the first isolated case: a run without any pays nothing
        collapse_heap();
        collapsed = true;
      }
      size_t out = answer_isolated_into(std::string_view(request, len), reply, kBuffer - 1);
      reply[out++] = '\n';
      if (!write_all(kReplies, reply, out)) break;
    }
    _exit(0);
  }

 private:
  static constexpr size_t kBuffer = 1 << 20;
  bool started_ = false;
  pid_t pid_ = -1;
  int to_ = -1;
  int from_ = -1;
  std::unique_ptr<LineReader> reader_;
};

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);  // a fork server gone is seen as EPIPE (and so is a reader gone: exit 1)
  const std::string_view flag = argc > 1 ? argv[1] : "";
  if (flag == "--serve-isolated") Zygote::serve(getppid());
  Zygote zygote;
  if (flag == "--isolating") zygote.start(false);
  InputCache cache;
  LineReader in;
  std::string_view line;
  std::string reply;
  while (in.next(&line)) {
    if (line.empty()) continue;
    Tokens head(line);
    std::string_view isolate;
    try {
      head.word();
      isolate = head.word();
    } catch (const Unreachable&) {  // answer() says so
    }
    if (isolate == "1") {
      if (!zygote.answer(line, &reply)) reply = answer_isolated(line);
    } else {
      cache.trim();
      reply = answer(line, &cache);
    }
    reply.push_back('\n');
    if (!write_all(1, reply.data(), reply.size())) return 1;
  }
  return 0;
}
