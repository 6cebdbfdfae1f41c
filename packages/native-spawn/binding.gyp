{
  "targets": [
    {
      "target_name": "native_spawn",
      "sources": ["src/native_spawn.c"],
      "cflags": ["-O2", "-Wall", "-Wextra"],
      "libraries": ["-lpthread"]
    }
  ]
}
