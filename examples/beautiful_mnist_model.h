#pragma once
// tinygrad's beautiful_mnist convnet, shared by examples/beautiful_mnist.cpp and the benchmark of its step
// (bench/beautiful_mnist_step.cpp): two blocks of two convolutions, BatchNorm and max-pooling, then a
// linear layer over the 576 features.
#include <tg/tg.h>

struct Model {
  tg::nn::Conv2d c1{1, 32, 5}, c2{32, 32, 5};
  tg::nn::BatchNorm bn1{32};
  tg::nn::Conv2d c3{32, 64, 3}, c4{64, 64, 3};
  tg::nn::BatchNorm bn2{64};
  tg::nn::Linear l1{576, 10};
  TG_PARAMETERS(c1, c2, bn1, c3, c4, bn2, l1)

  tg::Tensor operator()(const tg::Tensor& x) {
    tg::Tensor h = bn1(c2(c1(x).relu()).relu()).max_pool2d();
    h = bn2(c4(c3(h).relu()).relu()).max_pool2d();
    return l1(h.flatten(1));
  }
};
