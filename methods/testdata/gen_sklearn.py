#!/usr/bin/python3
"""Generate the scikit-learn reference fixtures for package methods.

Run from this directory:  /usr/bin/python3 gen_sklearn.py
It writes small CSV files (one header line, full-precision floats) and
sklearn.json (parameters and versions). sklearn_test.go reads them.
"""
import json

import numpy as np
import sklearn
from sklearn.cluster import MeanShift, estimate_bandwidth
from sklearn.datasets import make_blobs, make_swiss_roll
from sklearn.manifold import LocallyLinearEmbedding
from sklearn.neighbors import KNeighborsRegressor


def write(name, header, rows):
    with open(name, "w") as f:
        f.write(",".join(header) + "\n")
        for row in np.atleast_2d(rows):
            f.write(",".join(repr(float(v)) for v in row) + "\n")


meta = {"sklearn": sklearn.__version__, "numpy": np.__version__}

# MeanShift (flat kernel, no bin seeding) with sklearn's estimated bandwidth.
X, _ = make_blobs(n_samples=90, centers=[[0, 0], [5, 5], [-4, 6]], cluster_std=0.7, random_state=0)
q = 0.2
bw = estimate_bandwidth(X, quantile=q)
ms = MeanShift(bandwidth=bw).fit(X)
write("meanshift_points.csv", ["x0", "x1"], X)
write("meanshift_centers.csv", ["c0", "c1"], ms.cluster_centers_)
write("meanshift_labels.csv", ["label"], ms.labels_.reshape(-1, 1))
meta["meanshift"] = {"quantile": q, "bandwidth": float(bw)}

# k-nearest-neighbour regression, uniform weights, k = 4.
rng = np.random.RandomState(1)
Xk = rng.uniform(-2, 2, size=(60, 3))
yk = np.column_stack([np.sin(Xk[:, 0]) + Xk[:, 1] ** 2, Xk[:, 2] - Xk[:, 0]])
Qk = rng.uniform(-2, 2, size=(15, 3))
pred = KNeighborsRegressor(n_neighbors=4).fit(Xk, yk).predict(Qk)
write("knn_x.csv", ["x0", "x1", "x2"], Xk)
write("knn_y.csv", ["y0", "y1"], yk)
write("knn_queries.csv", ["x0", "x1", "x2"], Qk)
write("knn_pred.csv", ["y0", "y1"], pred)
meta["knn"] = {"k": 4}

# Locally linear embedding (standard method, dense eigensolver).
Xs, t = make_swiss_roll(n_samples=300, noise=0.0, random_state=2)
lle = LocallyLinearEmbedding(n_neighbors=10, n_components=2, reg=1e-3, eigen_solver="dense")
emb = lle.fit_transform(Xs)
write("lle_points.csv", ["x0", "x1", "x2"], Xs)
write("lle_t.csv", ["t"], t.reshape(-1, 1))
write("lle_embedding.csv", ["e0", "e1"], emb)
meta["lle"] = {"n_neighbors": 10, "n_components": 2, "reg": 1e-3}

with open("sklearn.json", "w") as f:
    json.dump(meta, f, indent=2, sort_keys=True)
    f.write("\n")
