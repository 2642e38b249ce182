// State loading and saving: safetensors, torch.save checkpoints, GGUF; round trips, hand-made files,
// values compared, and corrupt files that must give a tg::Error naming the file.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>

#include "engine/buffers.h"
#include "nn/state/json.h"
#include "state_test_util.h"
#include "state_torch_fixture.h"
#include "tg/counters.h"
#include "tg/jit.h"
#include "tg/state.h"
#include "uop/uop.h"

using namespace tg;             // NOLINT
using namespace tg::nn::state;  // NOLINT
using namespace state_test;     // NOLINT

namespace {

// Expects `fn` to throw a tg::Error whose message contains every one of `parts`.
template <class F>
void expect_error(F&& fn, std::initializer_list<std::string> parts) {
  try {
    fn();
    ADD_FAILURE() << "no tg::Error thrown";
  } catch (const Error& e) {
    for (auto& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what() << " lacks " << p;
  }
}

Bytes safetensors_bytes(const std::string& header, const Bytes& data) {
  Bytes b;
  put_le<uint64_t>(b, header.size());
  put_str(b, header);
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

}  // namespace

// ---------------------------------------------------------------- JSON
TEST(StateJson, ParsesValuesEscapesAndNumbers) {
  Json j = parse_json(R"( {"a": [1, -2.5e3, true, false, null], "s": "q\"\\\/\n\u00e9\ud83d\ude00", "n": {}} )", "t");
  ASSERT_EQ(j.kind, Json::Kind::Object);
  ASSERT_EQ(j.find("a")->items.size(), 5u);
  EXPECT_EQ(j.find("a")->items[0].as_uint(), 1u);
  EXPECT_FALSE(j.find("a")->items[1].as_uint());
  EXPECT_EQ(j.find("a")->items[1].text, "-2.5e3");
  EXPECT_EQ(j.find("s")->text, "q\"\\/\n\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ(j.find("n")->kind, Json::Kind::Object);
  EXPECT_EQ(parse_json("18446744073709551615", "t").as_uint(), UINT64_MAX);
  EXPECT_FALSE(parse_json("18446744073709551616", "t").as_uint());
  EXPECT_EQ(json_quote("a\"b\\c\x01"), "\"a\\\"b\\\\c\\u0001\"");
}

TEST(StateJson, RejectsWhatIsNotStrictJson) {
  for (const char* bad : {"",        "{",         "[1,]",     "{\"a\":1,}",   "{'a':1}",     "01",
                          "1.",      ".5",        "+1",       "NaN",          "[1] x",       "{\"a\":1,\"a\":2}",
                          "\"\\x\"", "\"\x01\"",  "\"\xff\"", "\"\xc0\x80\"", "\"\\ud800\"", "tru",
                          "[1 2]",   "{\"a\" 1}", "\"abc"})
    EXPECT_THROW(parse_json(bad, "t"), Error) << bad;
  std::string deep(100000, '[');
  expect_error([&] { parse_json(deep, "ctx"); }, {"ctx", "nesting deeper than 64"});
  EXPECT_NO_THROW(parse_json(std::string(64, '[') + std::string(64, ']'), "t"));
}

// ---------------------------------------------------------------- safetensors
TEST(StateSafetensors, RoundTripsDtypesAndShapes) {
  TempDir dir;
  std::map<std::string, Tensor> in = {
      {"f32", Tensor(std::vector<float>{1.5f, -2, 3.25f, 4, 5, 6}, {2, 3})},
      {"f16", Tensor(std::vector<float>{0.5f, -1, 2048, 3}, {4}).cast(dtypes::float16)},
      {"bf16", Tensor(std::vector<float>{1, -0.5f, 256}, {3, 1}).cast(dtypes::bfloat16)},
      {"f64", Tensor(std::vector<double>{1e100, -1e-100}, {2})},
      {"i64", Tensor(std::vector<int64_t>{int64_t(1) << 40, -7, 0, 9}, {2, 2})},
      {"i32", Tensor(std::vector<int32_t>{-2147483647, 5}, {1, 2, 1})},
      {"i16", Tensor(std::vector<int16_t>{-300, 300}, {2})},
      {"u16", Tensor(std::vector<uint16_t>{65535, 1}, {2})},
      {"i8", Tensor(std::vector<int8_t>{-128, 127, 0}, {3})},
      {"u8", Tensor(std::vector<uint8_t>{255, 0, 7, 8}, {2, 2})},
      {"u32", Tensor(std::vector<uint32_t>{4000000000u}, {1})},
      {"u64", Tensor(std::vector<uint64_t>{uint64_t(1) << 63}, {1})},
      {"bool", Tensor(std::vector<uint8_t>{1, 0, 1}).cast(dtypes::bool_)},
      {"scalar", Tensor(2.5f)},
      {"empty", Tensor::zeros({0, 3})},
      {"computed", (Tensor::arange(6).reshape({2, 3}).T() * 2).cast(dtypes::int16)},
      {"name with \"quotes\" and \xc3\xa9", Tensor(std::vector<float>{42}, {1})},
  };
  std::string path = dir.file("a.safetensors");
  safe_save(in, path, {{"format", "pt"}, {"note", "x\"y"}});

  SafetensorsHeader h = safe_load_metadata(path);
  EXPECT_EQ(h.data_start % 8, 0u);
  EXPECT_EQ(h.metadata.at("format"), "pt");
  EXPECT_EQ(h.metadata.at("note"), "x\"y");
  EXPECT_EQ(h.tensors.at("f32").dtype, dtypes::float32);
  EXPECT_EQ(h.tensors.at("bf16").shape, (Shape{3, 1}));
  EXPECT_EQ(h.tensors.at("empty").end - h.tensors.at("empty").begin, 0u);

  auto out = safe_load(path);
  ASSERT_EQ(out.size(), in.size());
  for (auto& [name, t] : in) {
    SCOPED_TRACE(name);
    const Tensor& u = out.at(name);
    EXPECT_EQ(u.shape(), t.shape());
    EXPECT_EQ(u.dtype(), t.dtype());
    EXPECT_EQ(u.device(), default_device());
    if (t.dtype() == dtypes::uint64 || t.dtype() == dtypes::int64) {
      EXPECT_EQ(u.tolist<int64_t>(), t.tolist<int64_t>());
    } else {
      EXPECT_EQ(u.tolist<double>(), t.tolist<double>());
    }
  }
  EXPECT_EQ(out.at("computed").tolist<int>(), (std::vector<int>{0, 6, 2, 8, 4, 10}));
  EXPECT_EQ(out.at("bool").tolist<int>(), (std::vector<int>{1, 0, 1}));
}

TEST(StateSafetensors, LoadIsLazyAndZeroCopyOnTheHost) {
  TempDir dir;
  std::string path = dir.file("w.safetensors");
  safe_save({{"w", Tensor(std::vector<float>{1, 2, 3, 4}, {2, 2})}}, path);
  int64_t kernels = GlobalCounters::kernel_count;
  auto host = safe_load(path, "HOST");
  auto dev = safe_load(path);
  EXPECT_EQ(GlobalCounters::kernel_count, kernels);  // nothing ran: the copy waits for first use
  const Tensor& h = host.at("w");
  EXPECT_EQ(h.device(), "HOST");
  ASSERT_EQ(h.uop()->op, Ops::VIEW);
  ASSERT_EQ(h.uop()->src[0]->op, Ops::BUFFER);
  auto buf = buffer_of(h.uop()->src[0].get());
  EXPECT_TRUE(buf->external());
  float first[4];
  std::memcpy(first, buf->ptr(), 16);  // the mapping itself
  EXPECT_EQ(first[0], 1.0f);
  EXPECT_THROW(buf->copyin(first, 16), Error);  // read-only
  EXPECT_EQ(h.to(default_device()).sum().item<float>(), 10.0f);
  EXPECT_EQ((dev.at("w") * 2).tolist<float>(), (std::vector<float>{2, 4, 6, 8}));
}

// On the CPU (host memory) kernels read the mapping in place; the first write to a loaded tensor copies it first
// (Buffer::read_only_view), so the file never changes.
TEST(StateSafetensors, CpuTensorsReadTheMappingUntilWritten) {
  TempDir dir;
  std::string path = dir.file("w.safetensors");
  // (stored by name: a at 0, b at 16, c at 19, a float at an address no float may be read from)
  safe_save({{"a", Tensor(std::vector<float>{1, 2, 3, 4}, {2, 2})},
             {"b", Tensor(std::vector<int8_t>{5, 6, 7})},
             {"c", Tensor(std::vector<float>{8, 9})}},
            path);
  auto m = safe_load(path, "CPU");
  Tensor w = m.at("a");
  ASSERT_EQ(w.uop()->op, Ops::VIEW);
  auto buf = buffer_of(w.uop()->src[0].get());
  EXPECT_EQ(buf->device(), "CPU");
  EXPECT_TRUE(buf->readonly());
  const void* mapped = buf->ptr();
  EXPECT_EQ((w * 2).tolist<float>(), (std::vector<float>{2, 4, 6, 8}));
  EXPECT_EQ(buf->ptr(), mapped) << "read in place";
  MemoryView shared = w.memory();  // handed to another library before the write
  EXPECT_TRUE(shared.readonly);
  w.assign(w + 1).realize();  // a kernel writes it: its own copy first
  EXPECT_FALSE(buf->readonly());
  EXPECT_NE(buf->ptr(), mapped);
  EXPECT_EQ(w.tolist<float>(), (std::vector<float>{2, 3, 4, 5}));
  Tensor b = m.at("b");
  b.assign(Tensor(std::vector<int8_t>{-1, -2, -3})).realize();  // a copy into it
  EXPECT_EQ(b.tolist<int>(), (std::vector<int>{-1, -2, -3}));
  EXPECT_EQ(m.at("c").uop()->op, Ops::COPY) << "misaligned: copied as before";
  EXPECT_EQ(m.at("c").tolist<float>(), (std::vector<float>{8, 9}));
  auto again = safe_load(path, "CPU");
  EXPECT_EQ(again.at("a").tolist<float>(), (std::vector<float>{1, 2, 3, 4})) << "the file is unchanged";
  EXPECT_EQ(again.at("b").tolist<int>(), (std::vector<int>{5, 6, 7}));
  m.clear();  // (w alone keeps the first mapping now)
  EXPECT_EQ(static_cast<const float*>(shared.data)[3], 4.0f) << "the shared view still reads the file's values";
}

// A TinyJit captured while a loaded weight was still the file's mapping reads the weight's own memory once a write
// has moved it there.
TEST(StateSafetensors, AJitReadsALoadedWeightAfterItIsWritten) {
  TempDir dir;
  std::string path = dir.file("w.safetensors");
  safe_save({{"w", Tensor(std::vector<float>{1, 2, 3, 4}, {4})}}, path);
  Tensor w = safe_load(path, "CPU").at("w");
  TinyJit scale([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{(w * in[0]).contiguous()}; });
  Tensor x(std::vector<float>{1, 1, 1, 2}, {4});
  for (int i = 0; i < 3; i++) EXPECT_EQ(scale({x})[0].tolist<float>(), (std::vector<float>{1, 2, 3, 8})) << i;
  w.assign(Tensor(std::vector<float>{10, 20, 30, 40}, {4})).realize();
  EXPECT_EQ(scale({x})[0].tolist<float>(), (std::vector<float>{10, 20, 30, 80}));
}

TEST(StateSafetensors, SavingOverAMappedFileKeepsLoadedTensorsValid) {
  TempDir dir;
  std::string path = dir.file("w.safetensors");
  safe_save({{"w", Tensor(std::vector<float>{1, 2, 3}, {3})}}, path);
  auto a = safe_load(path, "HOST");
  safe_save({{"w", a.at("w").to(default_device()) * 10}, {"extra", Tensor(std::vector<int32_t>{1})}}, path);
  EXPECT_EQ(a.at("w").to(default_device()).tolist<float>(), (std::vector<float>{1, 2, 3}));
  auto b = safe_load(path);
  EXPECT_EQ(b.at("w").tolist<float>(), (std::vector<float>{10, 20, 30}));
  EXPECT_EQ(b.size(), 2u);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp" + std::to_string(::getpid())));
}

TEST(StateSafetensors, ReadsAHandWrittenFile) {
  TempDir dir;
  std::string path = dir.file("h.safetensors");
  Bytes data = bytes_of(std::vector<int16_t>{1, -2, 3, -4, 5, -6});
  data.push_back(1);  // bool
  std::string header =
      " {\"__metadata__\": {\"k\": \"v\"},\n \"b\": {\"shape\": [], \"dtype\": \"BOOL\", "
      "\"data_offsets\": [12, 13]}, \"x\\u00e9\": {\"dtype\": \"I16\", \"shape\": [3, 2], "
      "\"data_offsets\": [0, 12]}}   ";
  write_file(path, safetensors_bytes(header, data));
  auto m = safe_load(path);
  EXPECT_EQ(m.at("x\xc3\xa9").shape(), (Shape{3, 2}));
  EXPECT_EQ(m.at("x\xc3\xa9").tolist<int>(), (std::vector<int>{1, -2, 3, -4, 5, -6}));
  EXPECT_EQ(m.at("b").item<int>(), 1);
  EXPECT_EQ(safe_load_metadata(path).metadata.at("k"), "v");
}

TEST(StateSafetensors, CorruptFilesNameTheFileAndTheProblem) {
  TempDir dir;
  std::string path = dir.file("bad.safetensors");
  auto check = [&](const Bytes& b, const std::string& what) {
    write_file(path, b);
    expect_error([&] { safe_load(path); }, {"safe_load", path, what});
  };
  Bytes f32 = bytes_of(std::vector<float>{1, 2});
  std::string ok = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  check(Bytes{1, 2, 3}, "truncated");
  check(safetensors_bytes(ok, {}), "past the data section");
  Bytes long_len = safetensors_bytes(ok, f32);
  long_len[0] = 0xF0;
  check(long_len, "truncated");
  long_len[5] = 0xFF;
  check(long_len, "limit");
  check(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})", f32), "JSON");
  check(safetensors_bytes(R"({"a":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}})", f32), "unsupported dtype");
  check(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", f32), "needs 12 bytes");
  check(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", f32), "shape");
  check(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", f32), "begin <= end");
  check(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", f32),
        "too many elements");
  check(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[2]}})", f32), "data_offsets");
  check(safetensors_bytes(R"({"a":1})", f32), "expected an object");
  check(safetensors_bytes(R"({"__metadata__":{"k":1}})", f32), "__metadata__");
  check(safetensors_bytes("[" + std::string(5000, '[') + std::string(5001, ']'), f32), "nesting");
  expect_error([&] { safe_load(dir.file("missing.safetensors")); }, {"missing.safetensors", "cannot open"});
  expect_error([&] { safe_load_metadata(dir.file("missing.safetensors")); }, {"safe_load_metadata"});
}

TEST(StateSafetensors, SaveRejectsWhatTheFormatCannotHold) {
  TempDir dir;
  expect_error([&] { safe_save({{"__metadata__", Tensor(1.0f)}}, dir.file("x")); }, {"__metadata__"});
  expect_error([&] { safe_save({{"bad\xff", Tensor(1.0f)}}, dir.file("x")); }, {"UTF-8"});
  expect_error([&] { safe_save({{"a", Tensor(1.0f)}}, dir.file("no/such/dir/x")); }, {"cannot create"});
}

// ---------------------------------------------------------------- torch
namespace {

void check_fixture_state_dict(const std::map<std::string, Tensor>& sd) {
  std::vector<std::string> keys;
  for (auto& [k, v] : sd) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"b", "expanded", "flag", "idx", "scalar", "w", "wt"}));
  EXPECT_EQ(sd.at("w").shape(), (Shape{2, 3}));
  EXPECT_EQ(sd.at("w").dtype(), dtypes::float32);
  EXPECT_EQ(sd.at("w").tolist<float>(), (std::vector<float>{0, 0.5f, 1, 1.5f, 2, 2.5f}));
  EXPECT_EQ(sd.at("wt").shape(), (Shape{3, 2}));
  EXPECT_EQ(sd.at("wt").tolist<float>(), (std::vector<float>{0, 1.5f, 0.5f, 2, 1, 2.5f}));
  EXPECT_EQ(sd.at("b").dtype(), dtypes::float16);
  EXPECT_EQ(sd.at("b").tolist<float>(), (std::vector<float>{1, -2, 0.5f, 3}));
  EXPECT_EQ(sd.at("idx").dtype(), dtypes::int64);
  EXPECT_EQ(sd.at("idx").tolist<int64_t>(), (std::vector<int64_t>{11, 12, 13, 14}));
  EXPECT_EQ(sd.at("flag").dtype(), dtypes::bool_);
  EXPECT_EQ(sd.at("flag").tolist<int>(), (std::vector<int>{1, 0, 1}));
  EXPECT_EQ(sd.at("scalar").shape(), Shape{});
  EXPECT_EQ(sd.at("scalar").item<float>(), 7.25f);
  EXPECT_EQ(sd.at("expanded").tolist<float>(), (std::vector<float>{1.5f, 2, 2.5f, 1.5f, 2, 2.5f}));
  EXPECT_EQ((sd.at("wt") + sd.at("w").T()).sum().item<float>(), 15.0f);
}

}  // namespace

TEST(StateTorch, LoadsATorchSaveArchive) {
  TempDir dir;
  std::string path = dir.file("model.pth");
  Bytes pkl(std::begin(kTorchStateDictPickle), std::end(kTorchStateDictPickle));
  write_file(path, torch_zip(pkl, fixture_storages(), "model"));
  int64_t kernels = GlobalCounters::kernel_count;
  auto sd = torch_load(path);
  EXPECT_EQ(GlobalCounters::kernel_count, kernels);
  check_fixture_state_dict(sd);
  auto host = torch_load(path, "HOST");
  EXPECT_EQ(host.at("w").device(), "HOST");
  EXPECT_EQ(host.at("w").to(default_device()).tolist<float>(), sd.at("w").tolist<float>());
  // Saved again as safetensors, strided HOST views ("wt", "expanded") included.
  std::string st = dir.file("model.safetensors");
  safe_save(host, st);
  check_fixture_state_dict(safe_load(st));
}

TEST(StateTorch, LoadsADeflatedArchive) {
  TempDir dir;
  std::string path = dir.file("deflated.pth");
  write_file(path, Bytes(std::begin(kTorchDeflatedCheckpoint), std::end(kTorchDeflatedCheckpoint)));
  check_fixture_state_dict(torch_load(path));
  // A corrupt deflate stream (the first entry's data: data.pkl) is an error, not garbage.
  Bytes bad(std::begin(kTorchDeflatedCheckpoint), std::end(kTorchDeflatedCheckpoint));
  size_t data = 30 + 13;  // local header + "ckpt/data.pkl"
  for (size_t i = data; i < data + 40; i++) bad[i] ^= 0x5A;
  write_file(path, bad);
  expect_error([&] { torch_load(path); }, {"torch_load", path, "data.pkl"});
}

TEST(StateTorch, NestedContainersFlattenAndMoreDtypes) {
  TempDir dir;
  PickleWriter p;
  p.empty_dict().mark();
  p.str("model").ordered_dict().mark();
  p.str("fc.weight").tensor("DoubleStorage", "a", 4, 0, {2, 2}, {1, 2});
  p.str("emb").tensor("BFloat16Storage", "b", 3, 0, {3}, {1});
  p.setitems();
  p.str("epoch").integer(7);
  p.str("layers").empty_list().mark();
  p.tensor("CharStorage", "c", 2, 0, {2}, {1}).tensor("ByteStorage", "d", 2, 1, {1}, {1});
  p.tensor("IntStorage", "e", 6, 0, {2, 0}, {1, 1});
  p.appends();
  p.str("opt").global("torch.optim", "SGD").empty_tuple().reduce();
  p.setitems();
  std::vector<uint16_t> bf;
  for (float f : {1.0f, -3.0f, 0.25f}) bf.push_back(f32_to_bf16(f));
  std::string path = dir.file("nested.pt");
  write_file(path, torch_zip(p.stop(), {{"a", bytes_of(std::vector<double>{1, 2, 3, 4})},
                                        {"b", bytes_of(bf)},
                                        {"c", Bytes{0xFF, 0x05}},
                                        {"d", Bytes{0x10, 0xF0}},
                                        {"e", Bytes(24, 0)}}));
  auto sd = torch_load(path);
  ASSERT_EQ(sd.size(), 5u);
  EXPECT_EQ(sd.at("model.fc.weight").tolist<double>(), (std::vector<double>{1, 3, 2, 4}));
  EXPECT_EQ(sd.at("model.emb").dtype(), dtypes::bfloat16);
  EXPECT_EQ(sd.at("model.emb").tolist<float>(), (std::vector<float>{1, -3, 0.25f}));
  EXPECT_EQ(sd.at("layers.0").tolist<int>(), (std::vector<int>{-1, 5}));
  EXPECT_EQ(sd.at("layers.1").dtype(), dtypes::uint8);
  EXPECT_EQ(sd.at("layers.1").tolist<int>(), (std::vector<int>{240}));
  EXPECT_EQ(sd.at("layers.2").shape(), (Shape{2, 0}));
  EXPECT_EQ(sd.at("layers.2").dtype(), dtypes::int32);
}

TEST(StateTorch, DeeplyNestedRebuildFromTypeLoads) {
  // torch._tensor._rebuild_from_type_v2(func, type, args, state) calls func(*args); a crafted file nests
  // 100,000 of them around one tensor (the globals memoized, 8 bytes a level). Unwrapping them recursed
  // once per level and overflowed the stack.
  constexpr int kDepth = 100000;
  PickleWriter p;
  p.empty_dict().str("t");
  p.global("torch._tensor", "_rebuild_from_type_v2").op('q').op(1);  // BINPUT 1
  p.global("torch._tensor", "Tensor").op('q').op(2).op('0');  // memoized, then popped (POP)
  for (int i = 0; i < kDepth; i++) {
    p.mark();
    if (i + 1 < kDepth) p.op('h').op(1);  // BINGET 1: the next level is another _rebuild_from_type_v2
    else p.global("torch._utils", "_rebuild_tensor_v2");
    p.op('h').op(2);
  }
  p.mark().mark().str("storage").global("torch", "FloatStorage").str("0").str("cpu").integer(4).tuple().persid();
  p.integer(0).int_tuple({2, 2}).int_tuple({2, 1}).boolean(false).ordered_dict().tuple();
  for (int i = 0; i < kDepth; i++) p.empty_dict().tuple();  // each level's state, then its 4-tuple
  p.reduce().op('s');
  TempDir dir;
  std::string path = dir.file("nested.pth");
  write_file(path, torch_zip(p.stop(), {{"0", bytes_of(std::vector<float>{1, 2, 3, 4})}}));
  auto sd = torch_load(path);
  ASSERT_EQ(sd.size(), 1u);
  EXPECT_EQ(sd.at("t").shape(), (Shape{2, 2}));
  EXPECT_EQ(sd.at("t").tolist<float>(), (std::vector<float>{1, 2, 3, 4}));
}

TEST(StateTorch, CorruptCheckpointsNameTheFileAndTheProblem) {
  TempDir dir;
  std::string path = dir.file("bad.pth");
  auto check = [&](const Bytes& b, const std::string& what) {
    write_file(path, b);
    expect_error([&] { torch_load(path); }, {"torch_load", path, what});
  };
  auto one = [](const std::string& type, int64_t numel, int64_t off, std::vector<int64_t> size,
                std::vector<int64_t> stride) {
    PickleWriter p;
    p.empty_dict().str("t").tensor(type, "0", numel, off, size, stride).op('s');
    return p.stop();
  };
  Bytes four = bytes_of(std::vector<float>{1, 2, 3, 4});
  check(torch_zip(one("FloatStorage", 4, 0, {2, 2}, {2, 1}), {}), "no entry");
  check(torch_zip(one("FloatStorage", 5, 0, {5}, {1}), {{"0", four}}), "needs more than");
  check(torch_zip(one("FloatStorage", 4, 1, {2, 2}, {2, 1}), {{"0", four}}), "reads element 4");
  check(torch_zip(one("FloatStorage", 4, 0, {2, 2}, {-1, 1}), {{"0", four}}), "non-negative");
  check(torch_zip(one("FloatStorage", 4, 0, {2, 2}, {1}), {{"0", four}}), "bad size/stride");
  check(torch_zip(one("FloatStorage", 4, 0, {2}, {int64_t(1) << 62}), {{"0", four}}), "reads element");
  check(torch_zip(one("ComplexFloatStorage", 2, 0, {2}, {1}), {{"0", four}}), "unsupported storage type");
  check(torch_zip(Bytes{0x80, 2, '}', 'X', 0xFF, 0xFF, 0, 0}, {}), "truncated");
  check(torch_zip(Bytes{0x80, 2, 's', '.'}, {}), "stack underflow");
  check(torch_zip(Bytes{0x80, 2, 'h', 9, '.'}, {}), "memo key 9");
  check(torch_zip(Bytes{0x80, 2, 0xFE, '.'}, {}), "unsupported opcode 0xfe");
  check(torch_zip(Bytes{0x80, 2, 'N'}, {}), "no STOP");
  PickleWriter q;
  q.global("torch._utils", "_rebuild_qtensor").empty_tuple().reduce();
  check(torch_zip(q.stop(), {}), "unsupported tensor kind");
  ZipWriter no_pkl;
  no_pkl.add("x/other", Bytes{1});
  check(no_pkl.finish(), "data.pkl");
  Bytes legacy = {0x80, 2, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19, '.'};
  check(legacy, "legacy");
  Bytes zip = torch_zip(one("FloatStorage", 4, 0, {4}, {1}), {{"0", four}});
  check(Bytes(zip.begin(), zip.end() - 30), "");
  Bytes moved_cd = zip;
  moved_cd[moved_cd.size() - 6] ^= 0x40;  // central directory offset
  check(moved_cd, "");
}

// ---------------------------------------------------------------- GGUF
namespace {

std::vector<float> ramp(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; i++) v[i] = std::sin(float(i) * 0.37f) * scale + (i % 7 == 0 ? scale : 0);
  return v;
}

}  // namespace

TEST(StateGGUF, LoadsMetadataAndDequantizesTensors) {
  for (uint32_t version : {2u, 3u}) {
    SCOPED_TRACE(version);
    TempDir dir;
    GGUFWriter w(version, 64);
    w.kv_str("general.architecture", "llama");
    w.kv_u32("general.alignment", 64);
    w.kv_u32("llama.context_length", 4096);
    w.kv_f32("llama.rope.freq_base", 0.5f);
    w.kv_bool("flag", true);
    w.kv_i32_array("ids", {1, -2, 3});
    w.kv_str_array("tokenizer.ggml.tokens", {"<s>", "</s>", "hi"});
    std::vector<float> f32 = ramp(12, 1);
    w.tensor("f32", {4, 3}, 0, bytes_of(f32));
    std::vector<uint16_t> f16;
    for (float x : ramp(8, 2)) f16.push_back(f32_to_f16(x));
    w.tensor("f16", {8}, 1, bytes_of(f16));
    auto [q8, q8_values] = quantize_q8_0(ramp(64, 3));
    w.tensor("q8", {32, 2}, 8, q8);
    auto [q4, q4_values] = quantize_q4(ramp(64, 5), false);
    w.tensor("q4_0", {64}, 2, q4);
    auto [q41, q41_values] = quantize_q4(ramp(96, 0.7f), true);
    w.tensor("q4_1", {32, 3, 1}, 3, q41);
    std::string path = dir.file("m.gguf");
    write_file(path, w.finish());

    int64_t kernels = GlobalCounters::kernel_count;
    GGUFFile g = gguf_load(path);
    EXPECT_EQ(GlobalCounters::kernel_count, kernels);
    EXPECT_EQ(g.kv.at("general.architecture").as_string(), "llama");
    EXPECT_EQ(g.kv.at("llama.context_length").as_int(), 4096);
    EXPECT_EQ(g.kv.at("llama.context_length").type, GGUFValue::Type::UInt32);
    EXPECT_EQ(g.kv.at("llama.rope.freq_base").as_float(), 0.5);
    EXPECT_EQ(g.kv.at("flag").repr(), "true");
    EXPECT_EQ(g.kv.at("ids").repr(), "[1, -2, 3]");
    EXPECT_EQ(g.kv.at("tokenizer.ggml.tokens").as_array().at(2).as_string(), "hi");
    EXPECT_THROW(g.kv.at("ids").as_string(), Error);

    EXPECT_EQ(g.tensors.at("f32").shape(), (Shape{3, 4}));
    EXPECT_EQ(g.tensors.at("f32").tolist<float>(), f32);
    EXPECT_EQ(g.tensors.at("f16").dtype(), dtypes::float16);
    std::vector<float> f16_values;
    for (uint16_t h : f16) f16_values.push_back(f16_to_f32(h));
    EXPECT_EQ(g.tensors.at("f16").tolist<float>(), f16_values);
    EXPECT_EQ(g.tensors.at("q8").shape(), (Shape{2, 32}));
    EXPECT_EQ(g.tensors.at("q8").dtype(), dtypes::float32);
    EXPECT_EQ(g.tensors.at("q8").tolist<float>(), q8_values);
    EXPECT_EQ(g.tensors.at("q4_0").tolist<float>(), q4_values);
    EXPECT_EQ(g.tensors.at("q4_1").shape(), (Shape{1, 3, 32}));
    std::vector<float> got = g.tensors.at("q4_1").tolist<float>();
    ASSERT_EQ(got.size(), q41_values.size());
    for (size_t i = 0; i < got.size(); i++) EXPECT_NEAR(got[i], q41_values[i], 1e-6f) << i;
  }
}

namespace {

// ggml's dequantize_row_q4_K and dequantize_row_q6_K, as loops over one block's bytes.
std::vector<float> q4_k_reference(const uint8_t* b) {
  const float d = f16_to_f32(uint16_t(b[0] | b[1] << 8)), dmin = f16_to_f32(uint16_t(b[2] | b[3] << 8));
  const uint8_t* sc = b + 4;
  const uint8_t* q = b + 16;
  std::vector<float> y;
  for (int j = 0; j < 8; j += 2) {
    float d12[2], m12[2];
    for (int h = 0; h < 2; h++) {
      const int i = j + h;
      const int s = i < 4 ? sc[i] & 63 : (sc[i + 4] & 0xF) | ((sc[i - 4] >> 6) << 4);
      const int m = i < 4 ? sc[i + 4] & 63 : (sc[i + 4] >> 4) | ((sc[i] >> 6) << 4);
      d12[h] = d * float(s), m12[h] = dmin * float(m);
    }
    for (int l = 0; l < 32; l++) y.push_back(d12[0] * float(q[l] & 0xF) - m12[0]);
    for (int l = 0; l < 32; l++) y.push_back(d12[1] * float(q[l] >> 4) - m12[1]);
    q += 32;
  }
  return y;
}

std::vector<float> q6_k_reference(const uint8_t* b) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float d = f16_to_f32(uint16_t(b[208] | b[209] << 8));
  std::vector<float> y(256);
  for (int n = 0; n < 256; n += 128) {
    for (int l = 0; l < 32; l++) {
      const int is = l / 16;
      const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
      const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[size_t(n + l)] = d * float(sc[is]) * float(q1);
      y[size_t(n + l + 32)] = d * float(sc[is + 2]) * float(q2);
      y[size_t(n + l + 64)] = d * float(sc[is + 4]) * float(q3);
      y[size_t(n + l + 96)] = d * float(sc[is + 6]) * float(q4);
    }
    ql += 64, qh += 32, sc += 8;
  }
  return y;
}

}  // namespace

// Q4_K and Q6_K blocks of random bytes (finite scales) against the loops of ggml's dequantizers.
TEST(StateGGUF, BlockWeightsMatchTheDequantizedTensors) {
  // Q4_0, Q4_1 and Q8_0 matrices (whole blocks per row) are kept in their blocks too; a vector or a K-quant is not.
  TempDir dir;
  GGUFWriter w;
  auto [q8, q8_values] = quantize_q8_0(ramp(3 * 64, 3));
  w.tensor("q8", {64, 3}, 8, q8);
  auto [q40, q40_values] = quantize_q4(ramp(2 * 96, 5), false);
  w.tensor("q4_0", {96, 2}, 2, q40);
  auto [q41, q41_values] = quantize_q4(ramp(4 * 32, 0.7f), true);
  w.tensor("q4_1", {32, 4}, 3, q41);
  auto [vec, vec_values] = quantize_q4(ramp(64, 1), false);
  w.tensor("vector", {64}, 2, vec);
  std::string path = dir.file("b.gguf");
  write_file(path, w.finish());
  GGUFFile g = gguf_load(path);
  EXPECT_EQ(g.blocks.size(), 3u);
  EXPECT_FALSE(g.blocks.count("vector"));
  for (const char* name : {"q8", "q4_0", "q4_1"}) {
    SCOPED_TRACE(name);
    const tg::nn::BlockWeight& b = g.blocks.at(name);
    const Tensor dense = g.tensors.at(name);
    EXPECT_EQ(b.dense().shape(), dense.shape());
    std::vector<float> want = dense.tolist<float>(), got = b.dense().tolist<float>();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); i++) EXPECT_NEAR(got[i], want[i], 1e-6f) << i;
    Tensor x = Tensor::arange(b.in_features()).reshape({1, b.in_features()}).cast(dtypes::float32) * 0.01f;
    want = x.matmul(dense.transpose()).tolist<float>(), got = b.linear(x).tolist<float>();
    for (size_t i = 0; i < got.size(); i++) EXPECT_NEAR(got[i], want[i], 1e-4f * (1 + std::fabs(want[i]))) << i;
  }
  EXPECT_EQ(g.blocks.at("q4_1").format(), "Q4_1");
  EXPECT_EQ(g.blocks.at("q4_1").nbytes(), 4 * 20);  // the file's bytes: scale, offset, 16 bytes of quants a block
}

TEST(StateGGUF, KQuantsMatchGgmlsDequantizers) {
  std::mt19937 rng(7);
  auto blocks = [&](int n, int size, std::initializer_list<int> half_at) {
    Bytes b(size_t(n * size));
    for (auto& x : b) x = uint8_t(rng());
    for (int i = 0; i < n; i++)
      for (int at : half_at) {  // a scale in [-2, 2]
        const uint16_t h = f32_to_f16(std::uniform_real_distribution<float>(-2, 2)(rng));
        b[size_t(i * size + at)] = uint8_t(h), b[size_t(i * size + at + 1)] = uint8_t(h >> 8);
      }
    return b;
  };
  TempDir dir;
  GGUFWriter w;
  const Bytes q4k = blocks(3, 144, {0, 2}), q6k = blocks(2, 210, {208});
  w.tensor("q4_k", {256, 3}, 12, q4k);
  w.tensor("q6_k", {512}, 14, q6k);
  std::string path = dir.file("k.gguf");
  write_file(path, w.finish());
  GGUFFile g = gguf_load(path);
  std::vector<float> want4, want6;
  for (int i = 0; i < 3; i++) {
    std::vector<float> y = q4_k_reference(q4k.data() + i * 144);
    want4.insert(want4.end(), y.begin(), y.end());
  }
  for (int i = 0; i < 2; i++) {
    std::vector<float> y = q6_k_reference(q6k.data() + i * 210);
    want6.insert(want6.end(), y.begin(), y.end());
  }
  EXPECT_EQ(g.tensors.at("q4_k").shape(), (Shape{3, 256}));
  std::vector<float> got4 = g.tensors.at("q4_k").tolist<float>(), got6 = g.tensors.at("q6_k").tolist<float>();
  ASSERT_EQ(got4.size(), want4.size());
  ASSERT_EQ(got6.size(), want6.size());
  for (size_t i = 0; i < got4.size(); i++) EXPECT_NEAR(got4[i], want4[i], 1e-5f * (1 + std::abs(want4[i]))) << "Q4_K " << i;
  for (size_t i = 0; i < got6.size(); i++) EXPECT_NEAR(got6[i], want6[i], 1e-5f * (1 + std::abs(want6[i]))) << "Q6_K " << i;
}

TEST(StateGGUF, CorruptFilesNameTheFileAndTheProblem) {
  TempDir dir;
  std::string path = dir.file("bad.gguf");
  auto check = [&](const Bytes& b, const std::string& what) {
    write_file(path, b);
    expect_error([&] { gguf_load(path); }, {"gguf_load", path, what});
  };
  GGUFWriter ok;
  ok.kv_str("a", "b");
  ok.tensor("t", {32}, 8, quantize_q8_0(ramp(32, 1)).first);
  Bytes good = ok.finish();
  check(Bytes{'G', 'G'}, "magic");
  Bytes v1 = good;
  v1[4] = 1;
  check(v1, "version 1");
  check(Bytes(good.begin(), good.begin() + 24), "cannot fit");
  check(Bytes(good.begin(), good.begin() + 50), "truncated: tensor name");
  check(Bytes(good.begin(), good.end() - 1), "run past the end");
  Bytes many = good;
  many[8 + 7] = 0x10;  // tensor count
  check(many, "cannot fit");
  GGUFWriter k;
  k.tensor("k", {256}, 13, Bytes(176, 0));
  check(k.finish(), "Q5_K");
  GGUFWriter odd;
  odd.tensor("o", {33}, 8, Bytes(68, 0));
  check(odd.finish(), "whole Q8_0 blocks");
  GGUFWriter align;
  align.kv_u32("general.alignment", 0);
  check(align.finish(), "general.alignment");
  GGUFWriter type;
  type.kv_raw("x", 13, Bytes{});
  check(type.finish(), "unknown metadata value type 13");
  GGUFWriter arr;
  Bytes huge;
  put_le<uint32_t>(huge, 0);
  put_le<uint64_t>(huge, uint64_t(1) << 60);
  arr.kv_raw("arr", 9, huge);
  check(arr.finish(), "longer than the file");
  GGUFWriter nest;
  Bytes deep;
  for (int i = 0; i < 20; i++) put_le<uint32_t>(deep, 9), put_le<uint64_t>(deep, 1);
  nest.kv_raw("deep", 9, deep);
  check(nest.finish(), "nested deeper");
  expect_error([&] { gguf_load(dir.file("none.gguf")); }, {"gguf_load", "none.gguf"});
}
