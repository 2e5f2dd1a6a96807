"""Generation stage: reverse-generate queries from chunks with a model (``generate``), from
``prompts``, judged by ``filters``, through a text-generation backend (``backends``)."""
