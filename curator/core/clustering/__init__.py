"""Clustering stage: embed queries, UMAP then KMeans (``cluster``), name clusters (``labels``),
and read a clustering back for the map and tables (``reads``)."""
