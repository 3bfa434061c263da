// spmd_caller: calls Paddle's exported SPMD rule functions directly, one case per line.
//
// Built on demand by paddle_spmd_port/native/compiled.py against the installed wheel's
// headers (paddle/include) and libraries (paddle/libs/libphi_core.so, libcommon.so).
//
// Protocol (stdin -> stdout, one line each, whitespace-separated tokens; strings are hex
// encoded, "-" for an empty string):
//
//   request   <rule> <isolate 0|1> <n_tensors> <tensor>... <n_attrs> <attr>...
//     tensor  "-"                                   a missing optional input
//             "T" <rank> <dim>... <n_dm> <m>... <n_partial> <p>... <mesh>
//     mesh    "-"                                   no process mesh
//             <ndim> <size>... <n_ids> <id>... <name_hex>...
//     attr    "b" 0|1 | "i" <int> | "f" <float> | "s" <hex>
//
//   reply     "R" <n_in> <attr>... <n_out> <attr>...  the rule's answer
//     attr    "A" <mesh> <n_dm> <m>... <n_partial> (<p> <reduce_type>)...
//             "V" <n> <attr>...                      a vector of attrs
//             "E" <python_exception_name> <hex message>   the rule raised
//             "U" <hex reason>                       this caller cannot express the case
//             "C" <signal>                           an isolated case killed its child
//
// With isolate=1 the case runs in a fork()ed child, so a segfault in Paddle costs one fork.
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "paddle/common/enforce.h"
#include "paddle/phi/core/distributed/auto_parallel/dist_attr.h"
#include "paddle/phi/core/distributed/auto_parallel/dist_meta_tensor.h"
#include "paddle/phi/core/distributed/auto_parallel/process_mesh.h"
#include "paddle/phi/infermeta/spmd_rules/batch_norm.h"
#include "paddle/phi/infermeta/spmd_rules/layer_norm.h"

namespace pd = phi::distributed;

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

std::string hex_decode(const std::string& token) {
  if (token == "-") return "";
  std::string out;
  for (size_t i = 0; i + 1 < token.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(token.substr(i, 2), nullptr, 16)));
  }
  return out;
}

class Tokens {
 public:
  explicit Tokens(const std::string& line) : in_(line) {}
  std::string word() {
    std::string w;
    if (!(in_ >> w)) throw Unreachable("request line ended early");
    return w;
  }
  int64_t integer() { return std::stoll(word()); }
  std::vector<int64_t> ints(int64_t n) {
    std::vector<int64_t> v;
    for (int64_t i = 0; i < n; ++i) v.push_back(integer());
    return v;
  }

 private:
  std::istringstream in_;
};

struct Attr {
  char type;
  std::string text;
};

pd::DistMetaTensor read_tensor(Tokens* t) {
  std::string head = t->word();
  if (head == "-") {  // Paddle's stand-in for a missing optional tensor: shape [0], empty attr
    return pd::DistMetaTensor(common::make_ddim({0}), pd::TensorDistAttr());
  }
  if (head != "T") throw Unreachable("bad tensor token " + head);
  std::vector<int64_t> shape = t->ints(t->integer());
  std::vector<int64_t> dims_mapping = t->ints(t->integer());
  std::vector<int64_t> partial = t->ints(t->integer());
  pd::TensorDistAttr attr;
  std::string mesh_head = t->word();
  if (mesh_head != "-") {
    int64_t ndim = std::stoll(mesh_head);
    std::vector<int64_t> mesh_shape = t->ints(ndim);
    std::vector<int64_t> ids = t->ints(t->integer());
    std::vector<std::string> names;
    for (int64_t i = 0; i < ndim; ++i) names.push_back(hex_decode(t->word()));
    attr.set_process_mesh(pd::ProcessMesh(mesh_shape, ids, names));
  }
  attr.set_dims_mapping(dims_mapping);
  if (!partial.empty()) attr.set_partial_status(partial);
  return pd::DistMetaTensor(common::make_ddim(shape), attr);
}

Attr read_attr(Tokens* t) {
  std::string type = t->word();
  if (type.size() != 1 || std::string("bifs").find(type[0]) == std::string::npos) {
    throw Unreachable("bad attribute type " + type);
  }
  return Attr{type[0], t->word()};
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
  bool boolean(size_t i) const { return std::stoi(get(i, 'b').text) != 0; }
  int integer(size_t i) const { return std::stoi(get(i, 'i').text); }
  float real(size_t i) const { return std::strtof(get(i, 'f').text.c_str(), nullptr); }
  std::string text(size_t i) const { return hex_decode(get(i, 's').text); }

 private:
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

pd::SpmdInfo call_rule(const std::string& rule, const std::vector<pd::DistMetaTensor>& in, const Attrs& a) {
  auto need = [&](size_t n) {
    if (in.size() != n) {
      throw Unreachable(rule + " takes " + std::to_string(n) + " tensors, got " + std::to_string(in.size()));
    }
  };
  if (rule == "batch_norm") {
    need(5);
    a.expect(6);
    return pd::BatchNormInferSpmd(in[0], in[1], in[2], in[3], in[4], a.boolean(0), a.real(1), a.real(2), a.text(3),
                                  a.boolean(4), a.boolean(5));
  }
  if (rule == "batch_norm_static") {
    need(5);
    a.expect(0);
    return pd::BatchNormInferSpmdStatic(in[0], in[1], in[2], in[3], in[4]);
  }
  if (rule == "batch_norm_grad") {
    need(9);
    a.expect(6);
    return pd::BatchNormGradInferSpmd(in[0], in[1], in[2], in[3], in[4], in[5], in[6], in[7], in[8], a.real(0),
                                      a.real(1), a.text(2), a.boolean(3), a.boolean(4), a.boolean(5));
  }
  if (rule == "layer_norm") {
    need(3);
    a.expect(2);
    return pd::LayerNormInferSpmd(in[0], in[1], in[2], a.real(0), a.integer(1));
  }
  if (rule == "layer_norm_reverse") {
    need(6);
    a.expect(2);
    return pd::LayerNormInferSpmdReverse(in[0], in[1], in[2], in[3], in[4], in[5], a.real(0), a.integer(1));
  }
  if (rule == "layer_norm_grad") {
    need(6);
    a.expect(2);
    return pd::LayerNormGradInferSpmd(in[0], in[1], in[2], in[3], in[4], in[5], a.real(0), a.integer(1));
  }
  throw Unreachable("Paddle exports no C++ rule for " + rule);
}

void write_attr(std::ostream& out, const pd::TensorDistAttr& attr) {
  out << " A";
  const pd::ProcessMesh& mesh = attr.process_mesh();
  if (mesh.empty()) {
    out << " -";
  } else {
    out << " " << mesh.shape().size();
    for (int64_t s : mesh.shape()) out << " " << s;
    out << " " << mesh.process_ids().size();
    for (int64_t id : mesh.process_ids()) out << " " << id;
    for (const std::string& name : mesh.dim_names()) out << " " << hex_encode(name);
  }
  out << " " << attr.dims_mapping().size();
  for (int64_t m : attr.dims_mapping()) out << " " << m;
  const auto& partial = attr.partial_status();
  out << " " << partial.size();
  for (const auto& kv : partial) out << " " << kv.first << " " << static_cast<int>(kv.second);
}

void write_arg(std::ostream& out, const pd::ArgDistAttr& arg) {
  if (paddle::holds_alternative<pd::TensorDistAttr>(arg)) {
    write_attr(out, paddle::get<pd::TensorDistAttr>(arg));
    return;
  }
  const auto& list = paddle::get<std::vector<pd::TensorDistAttr>>(arg);
  out << " V " << list.size();
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
    case common::ErrorCode::INVALID_TYPE:
      return "TypeError";
    default:
      return "RuntimeError";
  }
}

std::string answer(const std::string& line) {
  std::ostringstream out;
  try {
    Tokens t(line);
    std::string rule = t.word();
    t.word();  // isolate flag, handled by the caller
    int64_t n_tensors = t.integer();
    std::vector<pd::DistMetaTensor> tensors;
    for (int64_t i = 0; i < n_tensors; ++i) tensors.push_back(read_tensor(&t));
    int64_t n_attrs = t.integer();
    std::vector<Attr> attrs;
    for (int64_t i = 0; i < n_attrs; ++i) attrs.push_back(read_attr(&t));
    pd::SpmdInfo info = call_rule(rule, tensors, Attrs(std::move(attrs), rule));
    out << "R " << info.first.size();
    for (const auto& arg : info.first) write_arg(out, arg);
    out << " " << info.second.size();
    for (const auto& arg : info.second) write_arg(out, arg);
  } catch (const Unreachable& e) {
    return std::string("U ") + hex_encode(e.what());
  } catch (const common::enforce::EnforceNotMet& e) {
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
  return out.str();
}

std::string answer_isolated(const std::string& line) {
  std::fflush(stdout);
  int fds[2];
  if (pipe(fds) != 0) return "U " + hex_encode("pipe() failed");
  pid_t pid = fork();
  if (pid < 0) return "U " + hex_encode("fork() failed");
  if (pid == 0) {
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    for (int sig : {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL}) signal(sig, SIG_DFL);
    close(fds[0]);
    std::string reply = answer(line) + "\n";
    ssize_t ignored = write(fds[1], reply.data(), reply.size());
    (void)ignored;
    _exit(0);
  }
  close(fds[1]);
  std::string reply;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) reply.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) return "C " + std::to_string(WTERMSIG(status));
  if (reply.empty()) return "C 0";
  if (reply.back() == '\n') reply.pop_back();
  return reply;
}

}  // namespace

int main() {
  std::ios::sync_with_stdio(false);
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    std::istringstream head(line);
    std::string rule, isolate;
    head >> rule >> isolate;
    std::string reply = isolate == "1" ? answer_isolated(line) : answer(line);
    std::fwrite(reply.data(), 1, reply.size(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
  }
  return 0;
}
