"""PyTorch as the gradient oracle for kiln's MLP loss.

Usage: torch_mlp.py DIR. Reads w1,b1,w2,b2,w3,b3,x,labels (.npy) from DIR,
computes the mean softmax cross-entropy of a ReLU MLP in float64 and its
gradients with torch.autograd, and writes loss.npy and grad_<name>.npy.
"""
import os
import sys

import numpy as np
import torch


def main(directory):
    load = lambda name: torch.from_numpy(np.load(os.path.join(directory, name + ".npy")))
    names = ["w1", "b1", "w2", "b2", "w3", "b3"]
    params = {name: load(name).double().requires_grad_(True) for name in names}
    x = load("x").double()
    labels = load("labels").long()
    h = torch.relu(x @ params["w1"] + params["b1"])
    h = torch.relu(h @ params["w2"] + params["b2"])
    logits = h @ params["w3"] + params["b3"]
    loss = torch.nn.functional.cross_entropy(logits, labels)
    loss.backward()
    np.save(os.path.join(directory, "loss.npy"), np.asarray(loss.detach().numpy()))
    for name in names:
        np.save(os.path.join(directory, "grad_" + name + ".npy"), params[name].grad.numpy())


if __name__ == "__main__":
    main(sys.argv[1])
