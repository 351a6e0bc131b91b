// optim/optim.h — everything in tg::optim: SGD, Adam, AdamW, parameter groups, clip_grad_norm_
// and learning-rate schedules.
#pragma once
#include "optim/adam.h"
#include "optim/clip_grad.h"
#include "optim/lr_scheduler.h"
#include "optim/optimizer.h"
#include "optim/sgd.h"
