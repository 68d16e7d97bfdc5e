import torch

# One intra-op thread: the networks are small, and on a shared 2-core machine more
# threads only contend with each other.
torch.set_num_threads(1)
