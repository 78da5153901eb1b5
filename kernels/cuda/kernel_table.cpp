// SPDX-License-Identifier: MIT
// The CUDA kernel table (kernels/kernel_table.h): the entries written so far, each the cuda::
// function of the same name (same signature as cpu::, checked by the assignment). The engine
// completes the others with entries that throw a DeviceError naming the op
// (engine/core/backend.cpp), so a run stops with a clear message rather than a wrong result.
#include "kernels/kernel_table.h"

namespace dt::kernels::cuda {

const KernelTable& kernel_table() {
    static const KernelTable table = [] {
        KernelTable t;
        t.device = "cuda";
        // elementwise (kernels/cuda/elementwise.cu)
        t.relu_forward = &cuda::relu_forward;
        t.relu_backward = &cuda::relu_backward;
        t.gelu_forward = &cuda::gelu_forward;
        t.gelu_backward = &cuda::gelu_backward;
        t.add_forward = &cuda::add_forward;
        t.bias_add_forward = &cuda::bias_add_forward;
        t.bias_add_backward = &cuda::bias_add_backward;  // bias_grad.cu
        t.dropout_forward = &cuda::dropout_forward;
        t.dropout_backward = &cuda::dropout_backward;
        t.init_uniform = &cuda::init_uniform;
        t.sgd_update_each = &cuda::sgd_update_each;
        t.adam_update_each = &cuda::adam_update_each;
        t.grad_norm_sq_each = &cuda::grad_norm_sq_each;  // grad_norm.cu
        t.grad_clip_each = &cuda::grad_clip_each;
        t.first_non_finite_each = &cuda::first_non_finite_each;
        t.exact_round = &cuda::exact_round;
        // conv2d (kernels/cuda/conv2d.cu, conv2d_wgrad.cu)
        t.conv2d_forward = &cuda::conv2d_forward;
        t.conv2d_backward_data = &cuda::conv2d_backward_data;
        t.conv2d_backward_weight = &cuda::conv2d_backward_weight;
        // linear (kernels/cuda/linear.cu)
        t.linear_forward = &cuda::linear_forward;
        t.linear_backward_data = &cuda::linear_backward_data;
        t.linear_backward_weight = &cuda::linear_backward_weight;
        // batch normalisation (kernels/cuda/batchnorm2d.cu)
        t.batchnorm2d_stats = &cuda::batchnorm2d_stats;
        t.batchnorm2d_invstd = &cuda::batchnorm2d_invstd;
        t.batchnorm2d_apply = &cuda::batchnorm2d_apply;
        t.batchnorm2d_update_running = &cuda::batchnorm2d_update_running;
        t.batchnorm2d_backward = &cuda::batchnorm2d_backward;
        // embedding (kernels/cuda/embedding.cu)
        t.embedding_forward = &cuda::embedding_forward;
        t.embedding_backward = &cuda::embedding_backward;
        // layer normalisation (kernels/cuda/layer_norm.cu)
        t.layer_norm_forward = &cuda::layer_norm_forward;
        t.layer_norm_backward = &cuda::layer_norm_backward;
        // causal self-attention (kernels/cuda/attention.cu)
        t.attention_forward = &cuda::attention_forward;
        t.attention_backward = &cuda::attention_backward;
        // pooling (kernels/cuda/pool2d.cu)
        t.maxpool2d_forward = &cuda::maxpool2d_forward;
        t.maxpool2d_backward = &cuda::maxpool2d_backward;
        t.avgpool2d_forward = &cuda::avgpool2d_forward;
        t.avgpool2d_backward = &cuda::avgpool2d_backward;
        t.global_avgpool_forward = &cuda::global_avgpool_forward;
        t.global_avgpool_backward = &cuda::global_avgpool_backward;
        // loss and evaluation (kernels/cuda/softmax_xent.cu)
        t.softmax_xent_forward = &cuda::softmax_xent_forward;
        t.softmax_xent_backward = &cuda::softmax_xent_backward;
        t.argmax_rows = &cuda::argmax_rows;
        return t;
    }();
    return table;
}

}  // namespace dt::kernels::cuda
