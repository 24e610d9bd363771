package dev.fgemma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The API as Java code (Java 8 source) sees it: the names of the contract. */
class JavaApiTest {
  @Test
  void everyContractNameFromJava() throws Exception {
    ModelOptions mo = new ModelOptions();
    mo.setNoMmap(false);
    try (FgModel model = FgModel.load(TestEnv.INSTANCE.getTiny(), mo);
        ToolCatalog catalog = ToolCatalog.fromJson(TestEnvKt.LAMP_CATALOG)) {
      ModelInfo info = model.getInfo();
      assertEquals(262144, info.getVocabSize());
      assertEquals(6, info.getLayers());
      assertEquals("f32", info.getWeightType());
      assertEquals(32, info.getFingerprint().length());

      int[] ids = model.tokenize("Grüße 😀", true);
      assertEquals("<bos>Grüße 😀", model.detokenize(ids));

      NluOptions no = new NluOptions();
      no.setConstrained(Constrain.CALL_ONLY);
      no.setMaxTokens(32);
      no.setThreads(1);
      try (FgNlu nlu = model.newNlu(catalog, no)) {
        NluResult r = nlu.askBlocking("turn the lamp on");
        List<ToolCall> calls = r.getCalls();
        assertEquals(1, calls.size());
        String name = calls.get(0).getName();
        Map<String, Object> args = calls.get(0).getArgs();
        assertTrue(name.equals("toggle_lamp") || name.equals("set_timer"), r.getJson());
        assertTrue(args.values().stream().allMatch(v -> v instanceof String || v instanceof Long), r.getJson());
        assertEquals("", r.getText());
        assertTrue(r.getJson().startsWith("{\"calls\":["));
        assertTrue(r.getDecodeMs() >= 0 && r.getChunkMs() >= 0 && r.getRestoreMs() >= 0);
      }
      try (FgNlu nlu = model.newNlu(catalog)) {
        assertTrue(nlu.getInfo().getPrefixTokens() > 0);
      }

      try (FgSession s = model.newSession()) {
        int next = s.prefill(new int[] {2, 100, 200});
        next = s.step(next);
        assertEquals(4, s.getPosition());
        float[] logits = s.logits();
        assertEquals(262144, logits.length);
        try (FgSnapshot snap = s.snapshot()) {
          assertEquals(4, snap.getPosition());
          String path = TestEnv.INSTANCE.scratch("java.fgsnap").getPath();
          snap.save(path);
          try (FgSnapshot loaded = FgSnapshot.load(model, path); FgSession f = loaded.fork()) {
            assertEquals(4, f.getPosition());
            assertEquals(s.step(next), f.step(next));
          }
          s.restore(snap);
          s.cancel();
        }
      }
      FgException e = assertThrows(FgException.class, () -> FgModel.load("/nonexistent/model.gguf"));
      assertEquals(FgStatus.IO, e.getStatus());
      assertTrue(e instanceof RuntimeException);
    }
    FgModel closed = FgModel.load(TestEnv.INSTANCE.getTiny());
    closed.close();
    closed.close();
    assertThrows(IllegalStateException.class, closed::getInfo);
    assertThrows(FgException.class, () -> FgModel.loadFd(-1, 0, 0, new ModelOptions()));

    // LoRA adapters: the path alone (scale 1) or with a scale; how they are applied
    ModelOptions lo = new ModelOptions();
    lo.setLora(java.util.Arrays.asList(new LoraAdapter("a.gguf"), new LoraAdapter("b.gguf", 0.5f)));
    lo.setLoraMerge(LoraMerge.BF16);
    assertEquals(1f, lo.getLora().get(0).getScale());
    assertEquals("b.gguf", lo.getLora().get(1).getPath());
    assertThrows(IllegalArgumentException.class, () -> new LoraAdapter("a.gguf", Float.NaN));
  }
}
