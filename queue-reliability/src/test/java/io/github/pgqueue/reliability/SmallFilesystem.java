package io.github.pgqueue.reliability;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.springframework.util.FileSystemUtils;

/**
 * A filesystem of the test's own, small enough to fill: a tmpfs of a few megabytes mounted on a
 * temporary folder. Filling it takes a ballast file that leaves a given number of bytes free;
 * deleting the ballast gives the space back. Unmounted (and its folder deleted) on
 * {@link #close()}, also when the JVM stops before the test's own clean-up runs.
 */
final class SmallFilesystem implements AutoCloseable {

	private static final int CHUNK = 64 * 1024;

	private final Path mountPoint;

	private final Thread unmountAtExit;

	private boolean mounted;

	private SmallFilesystem(Path mountPoint) {
		this.mountPoint = mountPoint;
		this.unmountAtExit = new Thread(this::unmount, "unmount-" + mountPoint.getFileName());
	}

	/**
	 * Why a filesystem cannot be mounted here (not root, {@code mount} refused), or null if it can:
	 * a scenario that needs one skips with this reason.
	 */
	static String unavailableBecause() {
		if (!"root".equals(System.getProperty("user.name"))) {
			return "mounting a small filesystem needs root (running as " + System.getProperty("user.name") + ")";
		}
		try (SmallFilesystem probe = mount(1)) {
			return null;
		}
		catch (IllegalStateException ex) {
			return ex.getMessage();
		}
	}

	/** Mounts a tmpfs of {@code megabytes} on a new temporary folder. */
	static SmallFilesystem mount(int megabytes) {
		Path folder;
		try {
			folder = Files.createTempDirectory("pgqueue-small-fs");
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
		SmallFilesystem filesystem = new SmallFilesystem(folder);
		String output = run("mount", "-t", "tmpfs", "-o", "size=" + megabytes + "m,mode=0755", "tmpfs",
				folder.toString());
		if (output != null) {
			FileSystemUtils.deleteRecursively(folder.toFile());
			throw new IllegalStateException("cannot mount a tmpfs on " + folder + ": " + output);
		}
		filesystem.mounted = true;
		Runtime.getRuntime().addShutdownHook(filesystem.unmountAtExit);
		return filesystem;
	}

	Path path() {
		return this.mountPoint;
	}

	/** Bytes free on the filesystem now. */
	long free() {
		try {
			FileStore store = Files.getFileStore(this.mountPoint);
			return store.getUsableSpace();
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
	}

	/**
	 * Writes a ballast file (real bytes: a tmpfs does not count a sparse file) until at most
	 * {@code leave} bytes are free.
	 */
	void fill(long leave) {
		ByteBuffer chunk = ByteBuffer.allocate(CHUNK);
		try (FileChannel ballast = FileChannel.open(ballast(), StandardOpenOption.CREATE, StandardOpenOption.WRITE,
				StandardOpenOption.APPEND)) {
			long toWrite = free() - leave;
			while (toWrite > 0) {
				chunk.clear().limit((int) Math.min(CHUNK, toWrite));
				toWrite -= ballast.write(chunk);
			}
		}
		catch (IOException ex) {
			// The server took the last bytes meanwhile: the filesystem is full, which is the point.
			if (!String.valueOf(ex.getMessage()).contains("No space left")) {
				throw new UncheckedIOException(ex);
			}
		}
	}

	/** Deletes the ballast: the space it took is free again. */
	void freeBallast() {
		try {
			Files.deleteIfExists(ballast());
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
	}

	private Path ballast() {
		return this.mountPoint.resolve("ballast");
	}

	@Override
	public void close() {
		unmount();
		try {
			Runtime.getRuntime().removeShutdownHook(this.unmountAtExit);
		}
		catch (IllegalStateException ex) {
			// The JVM is stopping: the hook runs (or ran) the same unmount.
		}
	}

	private synchronized void unmount() {
		if (!this.mounted) {
			return;
		}
		// Lazily if a process still has a file open there (a server that outlived its test).
		if (run("umount", this.mountPoint.toString()) != null) {
			String lazy = run("umount", "-l", this.mountPoint.toString());
			if (lazy != null) {
				throw new IllegalStateException("Could not unmount " + this.mountPoint + ": " + lazy);
			}
		}
		this.mounted = false;
		FileSystemUtils.deleteRecursively(this.mountPoint.toFile());
	}

	@Override
	public String toString() {
		return "tmpfs on " + this.mountPoint;
	}

	/** Runs {@code command}; null if it succeeded, else what it printed. */
	private static String run(String... command) {
		try {
			Process process = new ProcessBuilder(new ArrayList<>(List.of(command))).redirectErrorStream(true).start();
			String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
			if (!process.waitFor(30, TimeUnit.SECONDS)) {
				process.destroyForcibly();
				return String.join(" ", command) + " timed out";
			}
			return (process.exitValue() == 0) ? null : String.join(" ", command) + ": " + output;
		}
		catch (IOException ex) {
			return String.join(" ", command) + ": " + ex;
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			return String.join(" ", command) + ": interrupted";
		}
	}

}
