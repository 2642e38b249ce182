// torch_load: a torch.save zip archive is <name>/data.pkl (the pickled object) plus one entry
// <name>/data/<key> per storage. The pickle names storages by persistent id ('storage', torch.FloatStorage,
// key, location, numel) and tensors by torch._utils._rebuild_tensor_v2(storage, offset, size, stride, ...).
#include <map>
#include <set>

#include "tensor/host_tensor.h"
#include "nn/state/loaders.h"
#include "nn/state/pickle.h"
#include "nn/state/zip.h"
#include "shape/view.h"

namespace tg::nn::state {
namespace {

constexpr const char* kWho = "torch_load";
constexpr size_t kMaxDims = 64;
constexpr int kMaxNesting = 32;

std::optional<DType> storage_dtype(const std::string& name) {
  static const std::map<std::string, DType> m = {
      {"FloatStorage", dtypes::float32},     {"DoubleStorage", dtypes::float64}, {"HalfStorage", dtypes::float16},
      {"BFloat16Storage", dtypes::bfloat16}, {"LongStorage", dtypes::int64},     {"IntStorage", dtypes::int32},
      {"ShortStorage", dtypes::int16},       {"CharStorage", dtypes::int8},      {"ByteStorage", dtypes::uint8},
      {"BoolStorage", dtypes::bool_}};
  auto it = m.find(name);
  return it == m.end() ? std::nullopt : std::optional<DType>(it->second);
}

struct Storage {
  DType dtype;
  int64_t numel;
  ZipData bytes;
  std::optional<Tensor> flat;  // the whole storage on the device, made on first strided use
};

class TorchHooks : public PickleHooks {
 public:
  TorchHooks(const ZipArchive& zip, std::string base, std::string device)
      : zip_(zip), base_(std::move(base)), device_(std::move(device)) {}

  std::vector<Tensor> tensors;

  PyObj* persistent_load(Unpickler& u, PyObj* pid) override {
    using K = PyObj::Kind;
    if (pid->kind != K::Tuple || pid->items.size() < 5 || pid->items[0]->kind != K::Str ||
        pid->items[0]->s != "storage")
      u.fail("persistent id is not ('storage', type, key, location, numel)");
    PyObj* type = pid->items[1];
    PyObj* key = pid->items[2];
    PyObj* numel = pid->items[4];
    if (type->kind != K::Global || key->kind != K::Str || numel->kind != K::Int || numel->big || numel->i < 0)
      u.fail("persistent id is not ('storage', type, key, location, numel)");
    auto dt = type->s == "torch" ? storage_dtype(type->name) : std::nullopt;
    if (!dt) u.fail("unsupported storage type " + type->s + "." + type->name);
    auto id = std::make_pair(key->s, int(dt->scalar));
    auto it = index_.find(id);
    if (it == index_.end()) {
      const ZipEntry* e = zip_.find(base_ + "/data/" + key->s);
      if (!e)
        u.fail("storage '" + key->s.substr(0, 100) + "' has no entry " + base_ + "/data/" + key->s.substr(0, 100));
      uint64_t need = 0;
      if (!mul_ok(uint64_t(numel->i), uint64_t(dt->itemsize()), &need) || need > e->uncompressed_size)
        u.fail("storage '" + key->s + "' of " + std::to_string(numel->i) + " x " + dt->name() +
               " needs more than its " + std::to_string(e->uncompressed_size) + " bytes");
      storages_.push_back(Storage{*dt, numel->i, zip_.read(*e), std::nullopt});
      it = index_.emplace(id, storages_.size() - 1).first;
    }
    PyObj* o = u.make(K::Ext);
    o->s = "storage";
    o->i = int64_t(it->second);
    return o;
  }

  PyObj* call(Unpickler& u, PyObj* callable, PyObj* args) override {
    using K = PyObj::Kind;
    if (callable->kind != K::Global) return PickleHooks::call(u, callable, args);
    const std::string& m = callable->s;
    const std::string& n = callable->name;
    auto& a = args->items;
    if ((m == "collections" && n == "OrderedDict") || (m == "builtins" && n == "dict")) {
      PyObj* d = u.make(K::Dict);
      if (!a.empty() && a[0]->kind == K::List) {  // OrderedDict([(k, v), ...])
        for (PyObj* kv : a[0]->items) {
          if (kv->kind != K::Tuple || kv->items.size() != 2) u.fail("OrderedDict item is not a (key, value) pair");
          d->items.insert(d->items.end(), kv->items.begin(), kv->items.end());
        }
      }
      return d;
    }
    if (m == "torch._utils" && (n == "_rebuild_tensor_v2" || n == "_rebuild_tensor")) return rebuild(u, a);
    if ((m == "torch._utils" && (n == "_rebuild_parameter" || n == "_rebuild_parameter_with_state")) ||
        (m == "torch.nn.parameter" && n == "Parameter")) {
      if (a.empty()) u.fail(n + " without arguments");
      return a[0];
    }
    if (m == "torch._tensor" && n == "_rebuild_from_type_v2") {  // (func, type, args, state): func(*args)
      // Unwrapped in a loop: a crafted file may nest these as deep as its size allows (recursing overflowed).
      PyObj* fn = callable;
      PyObj* fargs = args;
      while (fn->is_global("torch._tensor", "_rebuild_from_type_v2")) {
        const auto& fa = fargs->items;
        if (fa.size() < 3 || fa[2]->kind != K::Tuple) u.fail("_rebuild_from_type_v2 needs (func, type, args, state)");
        fn = fa[0];
        fargs = fa[2];
      }
      return call(u, fn, fargs);
    }
    if (m == "torch._utils" && n.rfind("_rebuild_", 0) == 0)
      u.fail("unsupported tensor kind torch._utils." + n + " (only dense tensors can be loaded)");
    return PickleHooks::call(u, callable, args);
  }

 private:
  // torch._utils._rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks)
  PyObj* rebuild(Unpickler& u, const std::vector<PyObj*>& a) {
    using K = PyObj::Kind;
    if (a.size() < 4 || a[0]->kind != K::Ext || a[0]->s != "storage" || a[1]->kind != K::Int || a[1]->big ||
        a[2]->kind != K::Tuple || a[3]->kind != K::Tuple)
      u.fail("_rebuild_tensor_v2 arguments are not (storage, offset, size, stride, ...)");
    Storage& st = storages_.at(size_t(a[0]->i));
    int64_t offset = a[1]->i;
    Shape size, stride;
    for (PyObj* s : a[2]->items) size.push_back(s->kind == K::Int && !s->big ? s->i : -1);
    for (PyObj* s : a[3]->items) stride.push_back(s->kind == K::Int && !s->big ? s->i : -1);
    std::string desc = "tensor of size " + fmt(size) + ", stride " + fmt(stride) + ", offset " + std::to_string(offset);
    if (size.size() > kMaxDims || size.size() != stride.size()) u.fail(desc + ": bad size/stride");
    uint64_t numel = 1, last = uint64_t(offset);  // `last`: the largest element index read
    if (offset < 0) u.fail(desc + ": negative offset");
    for (size_t k = 0; k < size.size(); k++) {
      if (size[k] < 0 || stride[k] < 0) u.fail(desc + ": sizes and strides must be non-negative integers");
      uint64_t span = 0;
      if (!mul_ok(numel, uint64_t(size[k]), &numel) || numel > (uint64_t(1) << 62))
        u.fail(desc + ": too many elements");
      if (size[k] > 0 && (!mul_ok(uint64_t(size[k] - 1), uint64_t(stride[k]), &span) || !add_ok(last, span, &last)))
        u.fail(desc + ": indexes overflow");
    }
    if (numel > 0 && last >= uint64_t(st.numel))
      u.fail(desc + ": reads element " + std::to_string(last) + " of a storage of " + std::to_string(st.numel));
    Tensor t = numel == 0 ? Tensor::zeros(size, {.dtype = st.dtype, .device = device_})
                          : make_tensor(st, size, stride, offset);
    PyObj* o = u.make(K::Ext);
    o->s = "tensor";
    o->i = int64_t(tensors.size());
    tensors.push_back(t);
    return o;
  }

  Tensor make_tensor(Storage& st, const Shape& size, const Shape& stride, int64_t offset) {
    size_t item = size_t(st.dtype.itemsize());
    Shape dense = strides_for_shape(size);
    bool contiguous = true;
    for (size_t k = 0; k < size.size(); k++) contiguous &= size[k] == 1 || stride[k] == dense[k];
    // A dense tensor is its own bytes of the storage: only those are copied to the device.
    if (contiguous) return file_tensor(st.bytes.data + size_t(offset) * item, st.dtype, size, st.bytes.owner, device_);
    // Permuted / expanded tensors: the whole storage is copied once, then viewed with the torch strides.
    if (!st.flat) st.flat = file_tensor(st.bytes.data, st.dtype, {st.numel}, st.bytes.owner, device_);
    return strided_view(*st.flat, size, stride, offset);
  }

  static std::string fmt(const Shape& s) {
    std::string r = "(";
    for (size_t i = 0; i < s.size() && i < 8; i++) r += (i ? ", " : "") + std::to_string(s[i]);
    return r + (s.size() > 8 ? ", ...)" : ")");
  }

  const ZipArchive& zip_;
  std::string base_, device_;
  std::vector<Storage> storages_;
  std::map<std::pair<std::string, int>, size_t> index_;  // (key, dtype) -> storages_
};

// The pickled object, flattened as tinygrad's get_state_dict: dict keys and list/tuple indexes joined by '.'.
class Flattener {
 public:
  Flattener(Unpickler& u, const std::vector<Tensor>& tensors, size_t budget)
      : u_(u), tensors_(tensors), budget_(budget) {}
  std::map<std::string, Tensor> out;

  void walk(PyObj* o, const std::string& prefix, int depth) {
    using K = PyObj::Kind;
    if (budget_-- == 0) u_.fail("object graph too large to flatten");
    if (o->kind == K::Ext && o->s == "tensor") {
      out.insert_or_assign(prefix.empty() ? prefix : prefix.substr(0, prefix.size() - 1), tensors_.at(size_t(o->i)));
      return;
    }
    if (o->kind != K::Dict && o->kind != K::List && o->kind != K::Tuple) return;  // numbers, strings, objects
    if (depth > kMaxNesting || !on_path_.insert(o).second) return;                // too deep, or a cycle
    bool dict = o->kind == K::Dict;
    for (size_t i = 0; i < o->items.size(); i += dict ? 2 : 1) {
      std::string key;
      if (!dict)
        key = std::to_string(i);
      else if (o->items[i]->kind == K::Str)
        key = o->items[i]->s;
      else if (o->items[i]->kind == K::Int && !o->items[i]->big)
        key = std::to_string(o->items[i]->i);
      else
        continue;  // keys of other types name nothing
      walk(o->items[dict ? i + 1 : i], prefix + key + ".", depth + 1);
    }
    on_path_.erase(o);
  }

 private:
  Unpickler& u_;
  const std::vector<Tensor>& tensors_;
  size_t budget_;
  std::set<PyObj*> on_path_;
};

}  // namespace

std::map<std::string, Tensor> torch_load_bytes(const std::shared_ptr<const FileBytes>& f, const std::string& device) {
  if (!ZipArchive::looks_like_zip(*f)) {
    bool legacy = f->size >= 2 && f->data[0] == 0x80;
    fail(kWho, f->path,
         legacy ? "legacy (pre-1.6) torch.save format is not supported; re-save it with a newer torch"
                : "not a torch.save zip archive");
  }
  ZipArchive zip(f, kWho);
  // The archive's folder is the one holding data.pkl (torch names it after the file: "model/data.pkl").
  const ZipEntry* pkl = nullptr;
  for (auto& e : zip.entries()) {
    size_t slash = e.name.find('/');
    if (slash != std::string::npos && e.name.compare(slash, std::string::npos, "/data.pkl") == 0) {
      pkl = &e;
      break;
    }
  }
  if (!pkl) fail(kWho, f->path, "no <archive>/data.pkl entry: not a torch.save checkpoint");
  std::string base = pkl->name.substr(0, pkl->name.size() - 9);
  if (const ZipEntry* bo = zip.find(base + "/byteorder")) {
    ZipData d = zip.read(*bo);
    if (std::string(reinterpret_cast<const char*>(d.data), d.size) != "little")
      fail(kWho, f->path, "big-endian checkpoints are not supported");
  }
  ZipData data = zip.read(*pkl);
  TorchHooks hooks(zip, base, load_device(device));
  Unpickler u(data.data, data.size, kWho, f->path + ": " + pkl->name, hooks);
  PyObj* root = u.load();
  Flattener flat(u, hooks.tensors, 4 * data.size + 1024);
  flat.walk(root, "", 0);
  return std::move(flat.out);
}

std::map<std::string, Tensor> torch_load(const std::string& path, const std::string& device) {
  return torch_load_bytes(FileBytes::map(path, kWho), device);
}

}  // namespace tg::nn::state
